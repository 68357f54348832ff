"""Generate a realistic mixed source tree for the deadline-audit benchmark.

    python bench/generate.py OUT_DIR --lines N [--seed S]

Writes about N lines: ~45 % Go (one go.mod module per service, packages for config with
env helpers, HTTP clients, a lease helper, handlers and a lot of ordinary business code),
~45 % Python (packages with settings modules, httpx/openai/aiohttp clients, asyncio
timeouts, a lease helper and ordinary code), and the rest in .env layers, .env.example,
YAML config and Markdown docs.

Most real code has no timeouts, so most generated files are plain business code. About half
of the Python files contain none of the words the Python prefilter looks for (timeout, env,
lease, client, read, total, ...): plain files are checked against FORBIDDEN below and
regenerated with other identifiers when a word slips in. The output is deterministic for a
seed and no two files have the same content (the tool caches facts per content hash).
"""

from __future__ import annotations

import argparse
import hashlib
import random
import re
import sys
from pathlib import Path

# Words (case-insensitive substrings) that must not occur in "plain" Python files: a
# superset of the Python extractor's prefilter vocabulary (extract/py_index.py).
FORBIDDEN = re.compile(
    r"timeout|deadline|ttl|lease|heartbeat|getenv|environ|settings|timedelta|sleep|interval"
    r"|renew|extend|keepalive|keep_alive|refresh|touch|watchdog|supervise|wait_for|call_later"
    r"|fail_after|move_on_after|client|session|openai|anthropic|connect|read|total|delay"
    r"|seconds|retry|retries|expire|duration|clock",
    re.IGNORECASE,
)

NOUNS = ["order", "invoice", "customer", "product", "shipment", "account", "payment", "cart",
         "coupon", "review", "warehouse", "supplier", "ledger", "refund", "profile", "address",
         "tag", "note", "bucket", "batch", "quote", "region", "tenant", "member", "team",
         "project", "ticket", "comment", "metric", "sample", "entry", "parcel", "route",
         "vendor", "budget", "asset", "contract", "policy", "claim", "rating", "listing",
         "booking", "voucher", "wallet", "station", "device", "sensor", "lane", "zone", "plan"]
ADJ = ["pending", "active", "archived", "primary", "draft", "open", "local", "public",
       "internal", "bulk", "daily", "monthly", "partial", "verified", "flagged", "manual"]
VERBS = ["compute", "validate", "normalize", "merge", "filter", "group", "rank", "score",
         "summarize", "apply", "build", "format", "parse", "render", "collect", "index",
         "match", "resolve", "sort", "split", "count", "find", "assign", "classify",
         "reconcile", "estimate", "allocate", "dedupe", "enrich", "convert"]
FIELDS = [("name", "string", "str"), ("code", "string", "str"), ("status", "string", "str"),
          ("amount", "float64", "float"), ("quantity", "int", "int"), ("price", "float64", "float"),
          ("weight", "float64", "float"), ("priority", "int", "int"), ("owner", "string", "str"),
          ("label", "string", "str"), ("rank", "int", "int"), ("discount", "float64", "float"),
          ("country", "string", "str"), ("category", "string", "str"), ("score", "float64", "float"),
          ("version", "int", "int"), ("email", "string", "str"), ("sku", "string", "str")]
SERVICES = ["billing", "catalog", "shipping", "accounts", "search", "payments", "inventory",
            "notify", "reports", "pricing", "fulfil", "identity", "ledger", "orders", "media"]
KNOB_KINDS = [("HTTP_TIMEOUT", "30s", 30), ("DB_TIMEOUT", "5s", 5), ("UPSTREAM_TIMEOUT", "20s", 20),
              ("JOB_LEASE", "120s", 120), ("LEASE_RENEW_INTERVAL", "40s", 40),
              ("REQUEST_TIMEOUT", "15s", 15), ("LLM_TIMEOUT", "600s", 600), ("POLL_INTERVAL", "10s", 10),
              ("SHUTDOWN_TIMEOUT", "25s", 25), ("CACHE_TTL", "300s", 300), ("STEP_TIMEOUT", "60s", 60),
              ("READ_TIMEOUT", "10s", 10), ("WRITE_TIMEOUT", "10s", 10), ("IDLE_TIMEOUT", "90s", 90)]


def camel(s: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in s.split("_"))


def lower_camel(s: str) -> str:
    c = camel(s)
    return c[:1].lower() + c[1:]


class Names:
    """Identifier factory: every call gives a fresh, plausible name."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.used: set[str] = set()

    def noun(self) -> str:
        for _ in range(20):
            n = self.rng.choice(NOUNS)
            if self.rng.random() < 0.5:
                n = f"{self.rng.choice(ADJ)}_{n}"
            if n not in self.used:
                self.used.add(n)
                return n
        while True:  # the plausible names are used up: number them
            n = f"{self.rng.choice(NOUNS)}_{self.rng.randrange(100, 9999)}"
            if n not in self.used:
                self.used.add(n)
                return n

    def verb(self) -> str:
        return self.rng.choice(VERBS)

    def fields(self, k: int) -> list[tuple[str, str, str]]:
        return self.rng.sample(FIELDS, k)


# --------------------------------------------------------------------------------------
# Go


def go_imports(body: str, extra: list[str] = ()) -> str:
    std = [p for p, probe in (("context", "context."), ("errors", "errors."), ("fmt", "fmt."),
                             ("net/http", "http."), ("os", "os."), ("sort", "sort."),
                             ("strconv", "strconv."), ("strings", "strings."), ("sync", "sync."),
                             ("time", "time."), ("encoding/json", "json.")) if probe in body]
    lines = [f'\t"{p}"' for p in std]
    if extra:
        lines.append("")
        lines.extend(f'\t"{p}"' for p in extra if p.rsplit("/", 1)[-1] + "." in body)
    if not std and not any(l.strip() for l in lines):
        return ""
    return "import (\n" + "\n".join(lines) + "\n)\n\n"


def go_struct(rng: random.Random, type_name: str, fields: list[tuple[str, str, str]]) -> str:
    out = [f"// {type_name} is one {type_name.lower()} as stored by this package.",
           f"type {type_name} struct {{", "\tID string `json:\"id\"`"]
    for f, gt, _ in fields:
        out.append(f"\t{camel(f)} {gt} `json:\"{f}\"`")
    if rng.random() < 0.4:
        out.append("\tTags []string `json:\"tags,omitempty\"`")
    if rng.random() < 0.4:
        out.append("\tCreatedAt time.Time `json:\"created_at\"`")
    out.append("}\n")
    return "\n".join(out)


def go_validate(rng: random.Random, type_name: str, fields) -> str:
    recv = type_name[0].lower()
    out = [f"// Validate reports the first problem with {recv}.",
           f"func ({recv} *{type_name}) Validate() error {{",
           f"\tif {recv}.ID == \"\" {{", f"\t\treturn errors.New(\"{type_name.lower()}: missing id\")", "\t}"]
    for f, gt, _ in fields:
        if gt == "string":
            out += [f"\tif strings.TrimSpace({recv}.{camel(f)}) == \"\" {{",
                    f"\t\treturn fmt.Errorf(\"{type_name.lower()} %s: empty {f}\", {recv}.ID)", "\t}"]
        elif gt == "int":
            out += [f"\tif {recv}.{camel(f)} < 0 {{",
                    f"\t\treturn fmt.Errorf(\"{type_name.lower()} %s: negative {f} %d\", {recv}.ID, {recv}.{camel(f)})", "\t}"]
        else:
            lim = rng.choice([100, 1000, 1e6])
            out += [f"\tif {recv}.{camel(f)} < 0 || {recv}.{camel(f)} > {lim:g} {{",
                    f"\t\treturn fmt.Errorf(\"{type_name.lower()} %s: {f} out of range\", {recv}.ID)", "\t}"]
    out += ["\treturn nil", "}\n"]
    return "\n".join(out)


def go_store(rng: random.Random, type_name: str, fields) -> str:
    store = f"{type_name}Store"
    key = next((f for f, gt, _ in fields if gt == "string"), None)
    out = [f"// {store} keeps {type_name} values in memory, safe for concurrent use.",
           f"type {store} struct {{", "\tmu    sync.RWMutex", f"\titems map[string]*{type_name}", "}\n",
           f"func New{store}() *{store} {{", f"\treturn &{store}{{items: make(map[string]*{type_name})}}", "}\n",
           f"func (s *{store}) Put(v *{type_name}) error {{",
           "\tif err := v.Validate(); err != nil {", "\t\treturn err", "\t}",
           "\ts.mu.Lock()", "\tdefer s.mu.Unlock()", "\ts.items[v.ID] = v", "\treturn nil", "}\n",
           f"func (s *{store}) Get(id string) (*{type_name}, error) {{",
           "\ts.mu.RLock()", "\tdefer s.mu.RUnlock()", "\tv, ok := s.items[id]", "\tif !ok {",
           f"\t\treturn nil, fmt.Errorf(\"%w: {type_name.lower()} %q\", ErrNotFound, id)", "\t}",
           "\treturn v, nil", "}\n",
           f"func (s *{store}) List() []*{type_name} {{",
           "\ts.mu.RLock()", "\tdefer s.mu.RUnlock()",
           f"\tout := make([]*{type_name}, 0, len(s.items))",
           "\tfor _, v := range s.items {", "\t\tout = append(out, v)", "\t}",
           "\tsort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })",
           "\treturn out", "}\n"]
    if key:
        out += [f"func (s *{store}) By{camel(key)}({lower_camel(key)} string) []*{type_name} {{",
                f"\tvar out []*{type_name}", "\tfor _, v := range s.List() {",
                f"\t\tif strings.EqualFold(v.{camel(key)}, {lower_camel(key)}) {{", "\t\t\tout = append(out, v)",
                "\t\t}", "\t}", "\treturn out", "}\n"]
    if rng.random() < 0.5:
        out += [f"func (s *{store}) Delete(id string) bool {{", "\ts.mu.Lock()", "\tdefer s.mu.Unlock()",
                "\tif _, ok := s.items[id]; !ok {", "\t\treturn false", "\t}", "\tdelete(s.items, id)",
                "\treturn true", "}\n"]
    return "\n".join(out)


def go_aggregate(rng: random.Random, names: Names, type_name: str, fields) -> str:
    num = [f for f, gt, _ in fields if gt != "string"] or ["quantity"]
    key = next((f for f, gt, _ in fields if gt == "string"), "status")
    n = rng.choice(num)
    fn = f"{camel(names.verb())}{camel(n)}By{camel(key)}"
    recv_ok = any(f == key for f, _, _ in fields) and any(f == n for f, _, _ in fields)
    if not recv_ok:
        return go_classify(rng, names)
    conv = "float64(v.%s)" % camel(n)
    out = [f"// {fn} sums {n} per {key}, skipping entries below the threshold.",
           f"func {fn}(values []*{type_name}, threshold float64) map[string]float64 {{",
           "\tout := make(map[string]float64)", "\tfor _, v := range values {",
           "\t\tif v == nil {", "\t\t\tcontinue", "\t\t}",
           f"\t\tx := {conv}", "\t\tif x < threshold {", "\t\t\tcontinue", "\t\t}",
           f"\t\tout[v.{camel(key)}] += x", "\t}", "\treturn out", "}\n"]
    if rng.random() < 0.6:
        out += [f"func top{camel(key)}(sums map[string]float64, k int) []string {{",
                "\tkeys := make([]string, 0, len(sums))", "\tfor key := range sums {",
                "\t\tkeys = append(keys, key)", "\t}", "\tsort.Slice(keys, func(i, j int) bool {",
                "\t\tif sums[keys[i]] == sums[keys[j]] {", "\t\t\treturn keys[i] < keys[j]", "\t\t}",
                "\t\treturn sums[keys[i]] > sums[keys[j]]", "\t})", "\tif len(keys) > k {",
                "\t\tkeys = keys[:k]", "\t}", "\treturn keys", "}\n"]
    return "\n".join(out)


def go_classify(rng: random.Random, names: Names) -> str:
    noun = names.noun()
    a, b, c = sorted(rng.sample(range(5, 500), 3))
    labels = rng.sample(["small", "medium", "large", "huge", "tiny", "normal", "wide"], 4)
    return "\n".join([
        f"func classify{camel(noun)}(v int) string {{", "\tswitch {",
        f"\tcase v <= 0:", f"\t\treturn \"none\"", f"\tcase v < {a}:", f"\t\treturn \"{labels[0]}\"",
        f"\tcase v < {b}:", f"\t\treturn \"{labels[1]}\"", f"\tcase v < {c}:", f"\t\treturn \"{labels[2]}\"",
        "\tdefault:", f"\t\treturn \"{labels[3]}\"", "\t}", "}\n",
        f"func parse{camel(noun)}Level(s string) (int, error) {{",
        "\ts = strings.TrimSpace(strings.ToLower(s))", "\tif s == \"\" {", "\t\treturn 0, nil", "\t}",
        "\tn, err := strconv.Atoi(s)", "\tif err != nil {",
        f"\t\treturn 0, fmt.Errorf(\"parse {noun.replace('_', ' ')} level %q: %w\", s, err)", "\t}",
        f"\tif n > {c * 2} {{", f"\t\tn = {c * 2}", "\t}", "\treturn n, nil", "}\n"])


def go_service(rng: random.Random, names: Names, type_name: str, fields, with_ctx_timeout: bool,
               cfg_pkg: str | None) -> str:
    svc = f"{type_name}Service"
    v = names.verb()
    out = [f"// {svc} applies the business rules for {type_name.lower()} values.",
           f"type {svc} struct {{", f"\tstore  *{type_name}Store", "\tlimit  int"]
    if with_ctx_timeout and cfg_pkg:
        out.append("\tcfg    config.Config")
    out += ["}\n",
            f"func (s *{svc}) {camel(v)}(ctx context.Context, ids []string) ([]*{type_name}, error) {{"]
    if with_ctx_timeout:
        knob = "cfg.StepTimeout" if cfg_pkg else f"{rng.choice([2, 5, 10, 30])}*time.Second"
        out += [f"\tctx, cancel := context.WithTimeout(ctx, s.{knob})" if cfg_pkg else
                f"\tctx, cancel := context.WithTimeout(ctx, {knob})", "\tdefer cancel()"]
    out += [f"\tout := make([]*{type_name}, 0, len(ids))", "\tfor i, id := range ids {",
            "\t\tif err := ctx.Err(); err != nil {", "\t\t\treturn out, err", "\t\t}",
            "\t\tif s.limit > 0 && i >= s.limit {", "\t\t\tbreak", "\t\t}",
            "\t\tv, err := s.store.Get(id)", "\t\tif errors.Is(err, ErrNotFound) {", "\t\t\tcontinue",
            "\t\t}", "\t\tif err != nil {", f"\t\t\treturn nil, fmt.Errorf(\"{v} %s: %w\", id, err)", "\t\t}",
            "\t\tout = append(out, v)", "\t}", "\treturn out, nil", "}\n"]
    return "\n".join(out)


def go_domain_file(rng: random.Random, names: Names, pkg: str, mod: str, timeouts: bool,
                   first: bool) -> str:
    parts = []
    if first:
        parts.append(f"// ErrNotFound is returned when a value does not exist.\nvar ErrNotFound = errors.New(\"{pkg}: not found\")\n")
    for _ in range(rng.randint(1, 3)):
        t = camel(names.noun())
        fields = names.fields(rng.randint(3, 6))
        parts.append(go_struct(rng, t, fields))
        parts.append(go_validate(rng, t, fields))
        parts.append(go_store(rng, t, fields))
        if rng.random() < 0.8:
            parts.append(go_aggregate(rng, names, t, fields))
        if rng.random() < 0.6:
            parts.append(go_service(rng, names, t, fields, timeouts and rng.random() < 0.5,
                                    f"{mod}/internal/config" if timeouts else None))
        if rng.random() < 0.4:
            parts.append(go_classify(rng, names))
    body = "\n".join(parts)
    return f"package {pkg}\n\n" + go_imports(body, [f"{mod}/internal/config"]) + body


def go_config_files(rng: random.Random, mod: str, svc: str, knobs) -> dict[str, str]:
    env = '''package config

import (
\t"os"
\t"strconv"
\t"time"
)

// envDuration reads a Go duration ("30s") from the environment, or returns def.
func envDuration(name string, def time.Duration) time.Duration {
\traw := os.Getenv(name)
\tif raw == "" {
\t\treturn def
\t}
\td, err := time.ParseDuration(raw)
\tif err != nil {
\t\treturn def
\t}
\treturn d
}

// envInt reads an integer from the environment, or returns def.
func envInt(name string, def int) int {
\traw := os.Getenv(name)
\tif raw == "" {
\t\treturn def
\t}
\tn, err := strconv.Atoi(raw)
\tif err != nil {
\t\treturn def
\t}
\treturn n
}

func envString(name, def string) string {
\tif v, ok := os.LookupEnv(name); ok {
\t\treturn v
\t}
\treturn def
}
'''
    fields, inits = [], []
    for env_name, _, seconds in knobs:
        field = camel(env_name.split("_", 1)[1].lower())
        # code defaults sometimes drift from the documented ones, as in real trees
        default = seconds if rng.random() < 0.8 else seconds * rng.choice([2, 3])
        fields.append(f"\t{field} time.Duration")
        inits.append(f"\t\t{field}: envDuration(\"{env_name}\", {default}*time.Second),")
    cfg = (f"package config\n\nimport \"time\"\n\n// Config holds the {svc} service settings.\n"
           "type Config struct {\n\tAddr string\n\tWorkers int\n" + "\n".join(fields) + "\n}\n\n"
           "// Load reads the configuration from the environment.\nfunc Load() Config {\n"
           "\treturn Config{\n\t\tAddr: envString(\"" + svc.upper() + "_ADDR\", \":8080\"),\n"
           "\t\tWorkers: envInt(\"" + svc.upper() + "_WORKERS\", 4),\n" + "\n".join(inits) + "\n\t}\n}\n")
    return {"internal/config/env.go": env, "internal/config/config.go": cfg}


def go_field(knobs, *words: str) -> str:
    for env_name, _, _ in knobs:
        if any(w in env_name for w in words):
            return camel(env_name.split("_", 1)[1].lower())
    return camel(knobs[0][0].split("_", 1)[1].lower())


def go_client_file(rng: random.Random, names: Names, mod: str, knobs, idx: int) -> str:
    up = camel(names.noun())
    http_f = go_field(knobs, "HTTP", "UPSTREAM")
    req_f = go_field(knobs, "REQUEST", "STEP")
    per_call = rng.choice([2, 3, 5, 8, 10])
    return f'''package clients

import (
\t"context"
\t"encoding/json"
\t"fmt"
\t"net/http"
\t"time"

\t"{mod}/internal/config"
)

// {up}Client talks to the {up.lower()} upstream over HTTP.
type {up}Client struct {{
\thttp    *http.Client
\tbaseURL string
\tcfg     config.Config
}}

func New{up}Client(cfg config.Config, baseURL string) *{up}Client {{
\treturn &{up}Client{{
\t\thttp:    &http.Client{{Timeout: cfg.{http_f}}},
\t\tbaseURL: baseURL,
\t\tcfg:     cfg,
\t}}
}}

// Fetch{up} loads one value; each call gets its own bound.
func (c *{up}Client) Fetch{up}(ctx context.Context, id string) (map[string]any, error) {{
\tctx, cancel := context.WithTimeout(ctx, c.cfg.{req_f})
\tdefer cancel()
\treq, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/v{idx % 3 + 1}/{up.lower()}/%s", c.baseURL, id), nil)
\tif err != nil {{
\t\treturn nil, err
\t}}
\tresp, err := c.http.Do(req)
\tif err != nil {{
\t\treturn nil, fmt.Errorf("fetch {up.lower()} %s: %w", id, err)
\t}}
\tdefer resp.Body.Close()
\tif resp.StatusCode != http.StatusOK {{
\t\treturn nil, fmt.Errorf("fetch {up.lower()} %s: status %d", id, resp.StatusCode)
\t}}
\tvar out map[string]any
\tif err := json.NewDecoder(resp.Body).Decode(&out); err != nil {{
\t\treturn nil, err
\t}}
\treturn out, nil
}}

// Ping{up} checks the upstream with a short fixed bound.
func (c *{up}Client) Ping{up}(ctx context.Context) error {{
\tctx, cancel := context.WithTimeout(ctx, {per_call}*time.Second)
\tdefer cancel()
\treq, err := http.NewRequestWithContext(ctx, http.MethodHead, c.baseURL+"/healthz", nil)
\tif err != nil {{
\t\treturn err
\t}}
\tresp, err := c.http.Do(req)
\tif err != nil {{
\t\treturn err
\t}}
\treturn resp.Body.Close()
}}
'''


def go_lease_file(mod: str) -> str:
    return '''package lease

import (
\t"context"
\t"errors"
\t"time"
)

// ErrLeaseExpired is returned when the work outlived its lease.
var ErrLeaseExpired = errors.New("lease expired")

// RunWithLease runs fn under a lease of d: a timer armed for d cancels the work unless
// it is renewed; it is renewed every d/3 while fn runs.
func RunWithLease(ctx context.Context, d time.Duration, fn func(ctx context.Context) error) error {
\treturn runWithLease(ctx, d, fn)
}

func runWithLease(ctx context.Context, d time.Duration, fn func(ctx context.Context) error) error {
\tctx, cancel := context.WithCancel(ctx)
\tdefer cancel()
\ttimer := time.NewTimer(d)
\tdefer timer.Stop()
\trenew := time.NewTicker(d / 3)
\tdefer renew.Stop()
\tdone := make(chan error, 1)
\tgo func() { done <- fn(ctx) }()
\tfor {
\t\tselect {
\t\tcase err := <-done:
\t\t\treturn err
\t\tcase <-renew.C:
\t\t\tif !timer.Stop() {
\t\t\t\t<-timer.C
\t\t\t}
\t\t\ttimer.Reset(d)
\t\tcase <-timer.C:
\t\t\tcancel()
\t\t\treturn ErrLeaseExpired
\t\t}
\t}
}
'''


def go_worker_file(rng: random.Random, names: Names, mod: str, knobs) -> str:
    job = camel(names.noun())
    lease_f = go_field(knobs, "LEASE")
    step_f = go_field(knobs, "STEP", "LLM", "UPSTREAM")
    inner = (f"\t\tstepCtx, cancel := context.WithTimeout(ctx, w.cfg.{step_f})"
             if rng.random() < 0.6 else
             f"\t\tstepCtx, cancel := context.WithTimeout(ctx, {rng.choice([30, 90, 300])}*time.Second)")
    return f'''package worker

import (
\t"context"
\t"fmt"
\t"time"

\t"{mod}/internal/config"
\t"{mod}/internal/lease"
)

// {job}Worker processes queued {job.lower()} jobs one at a time.
type {job}Worker struct {{
\tcfg   config.Config
\tqueue chan string
\tdone  map[string]time.Time
}}

func New{job}Worker(cfg config.Config) *{job}Worker {{
\treturn &{job}Worker{{cfg: cfg, queue: make(chan string, 64), done: map[string]time.Time{{}}}}
}}

func (w *{job}Worker) Run(ctx context.Context) error {{
\tfor {{
\t\tselect {{
\t\tcase <-ctx.Done():
\t\t\treturn ctx.Err()
\t\tcase id := <-w.queue:
\t\t\tif err := w.handle(ctx, id); err != nil {{
\t\t\t\tfmt.Printf("{job.lower()} %s: %v\\n", id, err)
\t\t\t}}
\t\t}}
\t}}
}}

func (w *{job}Worker) handle(ctx context.Context, id string) error {{
\treturn lease.RunWithLease(ctx, w.cfg.{lease_f}, func(ctx context.Context) error {{
{inner}
\t\tdefer cancel()
\t\tif err := w.step(stepCtx, id); err != nil {{
\t\t\treturn fmt.Errorf("step: %w", err)
\t\t}}
\t\tw.done[id] = time.Now()
\t\treturn nil
\t}})
}}

func (w *{job}Worker) step(ctx context.Context, id string) error {{
\tselect {{
\tcase <-ctx.Done():
\t\treturn ctx.Err()
\tcase <-time.After({rng.choice([1, 2, 5])} * time.Second):
\t\treturn nil
\t}}
}}
'''


def go_server_file(rng: random.Random, names: Names, mod: str, knobs) -> str:
    r = go_field(knobs, "READ", "REQUEST")
    wr = go_field(knobs, "WRITE", "REQUEST")
    idle = go_field(knobs, "IDLE", "SHUTDOWN")
    routes = [names.noun() for _ in range(rng.randint(2, 4))]
    handlers = []
    regs = []
    for rt in routes:
        h = f"handle{camel(rt)}"
        regs.append(f"\tmux.HandleFunc(\"/{rt.replace('_', '-')}\", s.{h})")
        handlers.append(f'''func (s *Server) {h}(w http.ResponseWriter, r *http.Request) {{
\tctx := r.Context()
\tid := r.URL.Query().Get("id")
\tif id == "" {{
\t\thttp.Error(w, "missing id", http.StatusBadRequest)
\t\treturn
\t}}
\tif err := ctx.Err(); err != nil {{
\t\thttp.Error(w, err.Error(), http.StatusServiceUnavailable)
\t\treturn
\t}}
\tw.Header().Set("Content-Type", "application/json")
\t_ = json.NewEncoder(w).Encode(map[string]string{{"id": id, "kind": "{rt}"}})
}}
''')
    return f'''package handlers

import (
\t"context"
\t"encoding/json"
\t"net/http"

\t"{mod}/internal/config"
)

// Server exposes the HTTP API.
type Server struct {{
\tcfg config.Config
\tsrv *http.Server
}}

func NewServer(cfg config.Config) *Server {{
\ts := &Server{{cfg: cfg}}
\tmux := http.NewServeMux()
{chr(10).join(regs)}
\ts.srv = &http.Server{{
\t\tAddr:         cfg.Addr,
\t\tHandler:      mux,
\t\tReadTimeout:  cfg.{r},
\t\tWriteTimeout: cfg.{wr},
\t\tIdleTimeout:  cfg.{idle},
\t}}
\treturn s
}}

func (s *Server) Start() error {{ return s.srv.ListenAndServe() }}

func (s *Server) Stop(ctx context.Context) error {{ return s.srv.Shutdown(ctx) }}

''' + "\n".join(handlers)


def go_main_file(mod: str, svc: str) -> str:
    return f'''package main

import (
\t"context"
\t"log"
\t"os"
\t"os/signal"
\t"time"

\t"{mod}/internal/config"
\t"{mod}/internal/handlers"
)

func main() {{
\tcfg := config.Load()
\tsrv := handlers.NewServer(cfg)
\tgo func() {{
\t\tif err := srv.Start(); err != nil {{
\t\t\tlog.Printf("{svc}: %v", err)
\t\t}}
\t}}()
\tstop := make(chan os.Signal, 1)
\tsignal.Notify(stop, os.Interrupt)
\t<-stop
\tctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
\tdefer cancel()
\t_ = srv.Stop(ctx)
}}
'''


# --------------------------------------------------------------------------------------
# Python


def py_settings(rng: random.Random, knobs, svc: str) -> str:
    lines = ['"""Runtime settings, read once from the environment."""', "", "from __future__ import annotations",
             "", "import os", "from dataclasses import dataclass, field", ""]
    for env_name, _, seconds in knobs:
        default = seconds if rng.random() < 0.8 else seconds // 2 or 1
        style = rng.random()
        const = env_name
        if style < 0.4:
            lines.append(f'{const} = float(os.getenv("{env_name}", "{default}"))')
        elif style < 0.7:
            lines.append(f'{const} = int(os.environ.get("{env_name}", {default}))')
        else:
            lines.append(f'{const} = float(os.environ["{env_name}"]) if "{env_name}" in os.environ else {default}.0')
    lines += ["", "", "@dataclass", "class Settings:", f'    service: str = "{svc}"',
              f'    workers: int = int(os.getenv("{svc.upper()}_WORKERS", "4"))']
    for env_name, _, _ in knobs[:3]:
        lines.append(f"    {env_name.lower()}: float = field(default_factory=lambda: {env_name})")
    lines += ["", "", "def load() -> Settings:", "    return Settings()", ""]
    return "\n".join(lines)


def py_knob(knobs, *words: str) -> str:
    for env_name, _, _ in knobs:
        if any(w in env_name for w in words):
            return env_name
    return knobs[0][0]


def py_clients(rng: random.Random, names: Names, knobs, pkg: str) -> str:
    up = names.noun()
    http_k = py_knob(knobs, "HTTP", "UPSTREAM")
    llm_k = py_knob(knobs, "LLM", "STEP")
    req_k = py_knob(knobs, "REQUEST", "DB")
    return f'''"""Outbound clients for the {up.replace("_", " ")} upstream."""

from __future__ import annotations

import aiohttp
import httpx
import openai

from {pkg} import settings

_http = httpx.Client(timeout=settings.{http_k}, base_url="https://{up.replace("_", "-")}.internal")
_llm = openai.OpenAI(timeout=settings.{llm_k}, max_retries={rng.choice([0, 1, 2, 3])})


def fetch_{up}(item_id: str) -> dict:
    response = _http.get(f"/v1/{up}/{{item_id}}")
    response.raise_for_status()
    return response.json()


def fetch_{up}_fast(item_id: str) -> dict:
    with httpx.Client(timeout={rng.choice([1, 2, 5])}.0) as client:
        response = client.get(f"https://{up.replace("_", "-")}.internal/v1/{up}/{{item_id}}")
        response.raise_for_status()
        return response.json()


def summarise_{up}(text: str) -> str:
    result = _llm.chat.completions.create(
        model="gpt-4o-mini",
        messages=[{{"role": "user", "content": text}}],
    )
    return result.choices[0].message.content or ""


async def stream_{up}(url: str) -> list[bytes]:
    bound = aiohttp.ClientTimeout(total=settings.{req_k}, sock_read={rng.choice([5, 10, 30])})
    chunks: list[bytes] = []
    async with aiohttp.ClientSession(timeout=bound) as session:
        async with session.get(url) as response:
            async for chunk in response.content.iter_chunked(65536):
                chunks.append(chunk)
    return chunks
'''


def py_lease(rng: random.Random, knobs, pkg: str) -> str:
    lease_k = py_knob(knobs, "LEASE")
    return f'''"""Run work under a renewable lease."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

from {pkg} import settings


class LeaseLost(RuntimeError):
    pass


async def run_with_lease(ttl: float, work: Callable[[], Awaitable[object]], renew: Callable[[float], Awaitable[bool]]) -> object:
    """Renew every ttl/3 while `work` runs; give up when a renewal fails."""

    async def heartbeat() -> None:
        while True:
            await asyncio.sleep(ttl / 3)
            if not await renew(ttl):
                raise LeaseLost("renewal refused")

    beat = asyncio.create_task(heartbeat())
    try:
        async with asyncio.timeout(ttl * {rng.choice([2, 3, 4])}):
            return await work()
    finally:
        beat.cancel()
        with contextlib.suppress(asyncio.CancelledError, LeaseLost):
            await beat


async def run_default(work: Callable[[], Awaitable[object]], renew: Callable[[float], Awaitable[bool]]) -> object:
    return await run_with_lease(settings.{lease_k}, work, renew)
'''


def py_worker(rng: random.Random, names: Names, knobs, pkg: str) -> str:
    job = names.noun()
    step_k = py_knob(knobs, "STEP", "LLM", "UPSTREAM")
    fixed = rng.choice([5, 10, 30, 120])
    return f'''"""Background processing of {job.replace("_", " ")} jobs."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

from {pkg} import settings
from {pkg}.lease import run_with_lease

log = logging.getLogger(__name__)


@dataclass
class {camel(job)}Job:
    job_id: str
    attempts: int = 0
    errors: list[str] = field(default_factory=list)


async def process_{job}(job: {camel(job)}Job) -> None:
    async with asyncio.timeout(settings.{step_k}):
        await asyncio.sleep(0)
        job.attempts += 1


async def handle_{job}(job: {camel(job)}Job, renew) -> None:
    try:
        await run_with_lease(settings.{py_knob(knobs, "LEASE")}, lambda: process_{job}(job), renew)
    except TimeoutError as exc:
        job.errors.append(repr(exc))
        log.warning("{job} %s timed out", job.job_id)


async def drain_{job}(queue: asyncio.Queue, renew) -> int:
    handled = 0
    while not queue.empty():
        job = await asyncio.wait_for(queue.get(), timeout={fixed})
        await handle_{job}(job, renew)
        handled += 1
    return handled
'''


def py_plain(rng: random.Random, names: Names) -> str:
    """Ordinary code: dataclasses, loops, comprehensions; none of the FORBIDDEN words."""
    parts = ['"""' + f"Domain helpers for {names.noun().replace('_', ' ')} records." + '"""', "",
             "from __future__ import annotations", "", "import itertools", "import math",
             "from collections import Counter, defaultdict", "from dataclasses import dataclass, field",
             "from typing import Iterable", "", ""]
    for _ in range(rng.randint(1, 3)):
        cls = camel(names.noun())
        flds = names.fields(rng.randint(3, 6))
        num = [f for f, _, pt in flds if pt != "str"] or ["weight"]
        if not any(f == num[0] for f, _, _ in flds):
            flds.append(("weight", "float64", "float"))
        key = next((f for f, _, pt in flds if pt == "str"), None)
        if key is None:
            flds.append(("label", "string", "str"))
            key = "label"
        n = num[0]
        lines = ["@dataclass(frozen=True)", f"class {cls}:", "    ident: str"]
        for f, _, pt in flds:
            default = {"str": '""', "int": "0", "float": "0.0"}[pt]
            lines.append(f"    {f}: {pt} = {default}")
        lines.append("    tags: tuple[str, ...] = ()")
        lines += ["", "    def is_valid(self) -> bool:",
                  f"        return bool(self.ident) and self.{n} >= 0", "",
                  f"    def with_{n}(self, value) -> \"{cls}\":",
                  f"        return {cls}(**{{**self.__dict__, \"{n}\": value}})", "", ""]
        v = names.verb()
        lines += [f"def {v}_{cls.lower()}_by_{key}(items: Iterable[{cls}]) -> dict[str, float]:",
                  "    out: dict[str, float] = defaultdict(float)", "    for item in items:",
                  "        if not item.is_valid():", "            continue",
                  f"        out[item.{key}] += float(item.{n})", "    return dict(out)", "", ""]
        lim = rng.choice([3, 5, 10, 20])
        lines += [f"def top_{cls.lower()}(items: list[{cls}], k: int = {lim}) -> list[{cls}]:",
                  f"    ranked = sorted(items, key=lambda it: (-it.{n}, it.ident))", "    return ranked[:k]", "", ""]
        if rng.random() < 0.7:
            lines += [f"def {cls.lower()}_histogram(items: Iterable[{cls}], bins: int = {rng.choice([4, 8, 10])}) -> list[int]:",
                      f"    values = [float(it.{n}) for it in items if it.is_valid()]", "    if not values:",
                      "        return [0] * bins", "    low, high = min(values), max(values)",
                      "    width = (high - low) / bins or 1.0", "    counts = [0] * bins", "    for v in values:",
                      "        idx = min(int((v - low) / width), bins - 1)", "        counts[idx] += 1",
                      "    return counts", "", ""]
        if rng.random() < 0.6:
            lines += [f"def pair_{cls.lower()}(items: list[{cls}]) -> list[tuple[str, str]]:",
                      "    pairs = []", "    for a, b in itertools.combinations(items, 2):",
                      f"        if a.{key} == b.{key} and a.ident != b.ident:", "            pairs.append((a.ident, b.ident))",
                      "    return pairs", "", ""]
        if rng.random() < 0.6:
            lines += [f"class {cls}Index:", f'    """Lookup of {cls} values by {key}."""', "",
                      f"    def __init__(self, items: Iterable[{cls}] = ()) -> None:",
                      f"        self._by_key: dict[str, list[{cls}]] = defaultdict(list)",
                      "        for item in items:", "            self.add(item)", "",
                      f"    def add(self, item: {cls}) -> None:", f"        self._by_key[item.{key}].append(item)", "",
                      f"    def find(self, value: str) -> list[{cls}]:", "        return list(self._by_key.get(value, ()))", "",
                      "    def counts(self) -> Counter:",
                      "        return Counter({k: len(v) for k, v in self._by_key.items()})", "",
                      "    def __len__(self) -> int:", "        return sum(len(v) for v in self._by_key.values())", "", ""]
        if rng.random() < 0.5:
            lines += [f"def {names.verb()}_{n}_stats(values: list[float]) -> dict[str, float]:",
                      "    if not values:", '        return {"mean": 0.0, "std": 0.0}',
                      "    mean = sum(values) / len(values)",
                      "    var = sum((v - mean) ** 2 for v in values) / len(values)",
                      '    return {"mean": mean, "std": math.sqrt(var), "max": max(values), "min": min(values)}', "", ""]
        parts.extend(lines)
    return "\n".join(parts).rstrip() + "\n"


def py_service(rng: random.Random, names: Names, pkg: str) -> str:
    """Ordinary code that also happens to mention settings (passes the prefilter, no sites)."""
    body = py_plain(rng, names)
    extra = (f"\n\nfrom {pkg} import settings  # noqa: E402\n\n\n"
             f"def worker_count() -> int:\n    return max(1, settings.load().workers)\n")
    return body + extra


# --------------------------------------------------------------------------------------
# env / yaml / markdown


def env_files(rng: random.Random, all_knobs: dict[str, list]) -> dict[str, str]:
    out = {}
    layer, prod, example, deep = ["# local development values"], ["# production overrides"], \
        ["# Copy to .env and adjust. Every knob the services read."], []
    for svc, knobs in all_knobs.items():
        example.append(f"\n# {svc}")
        for env_name, text, seconds in knobs:
            example.append(f"{env_name}={seconds}")
            if rng.random() < 0.6:
                layer.append(f"{env_name}={seconds if rng.random() < 0.7 else seconds * 2}")
            if rng.random() < 0.3:
                prod.append(f"{env_name}={seconds * rng.choice([1, 2, 4])}")
            if rng.random() < 0.2:
                deep.append(f"{env_name}={max(1, seconds // 2)}")
        layer.append(f"{svc.upper()}_WORKERS={rng.choice([2, 4, 8])}")
    out[".env"] = "\n".join(layer) + "\n"
    out[".env.production"] = "\n".join(prod) + "\n"
    out[".env.example"] = "\n".join(example) + "\n"
    if deep:
        out["deploy/local/.env"] = "# per-machine overrides\n" + "\n".join(deep) + "\n"
    return out


def yaml_file(rng: random.Random, svc: str, knobs) -> str:
    lines = [f"# {svc} service configuration", f"service: {svc}", "server:", "  port: 8080",
             f"  workers: {rng.choice([2, 4, 8])}", "timeouts:"]
    for env_name, text, _ in knobs:
        lines.append(f"  {env_name.split('_', 1)[1].lower()}: {text}")
    lines += ["retry:", f"  attempts: {rng.choice([3, 5])}", "  backoff: 2s", "features:"]
    lines += [f"  {names}: {str(rng.random() < 0.5).lower()}" for names in rng.sample(NOUNS, 5)]
    lines += ["---", "apiVersion: apps/v1", "kind: Deployment", f"metadata:\n  name: {svc}", "spec:",
              "  template:", "    spec:", f"      terminationGracePeriodSeconds: {rng.choice([30, 60])}",
              "      containers:", f"        - name: {svc}", "          env:"]
    for env_name, _, seconds in knobs:
        lines += [f"            - name: {env_name}", f"              value: \"{seconds}\""]
    return "\n".join(lines) + "\n"


def md_file(rng: random.Random, svc: str, knobs) -> str:
    lines = [f"# {svc.capitalize()} operations", "",
             f"The {svc} service reads its settings from the environment (see `.env.example`).", "",
             "| Variable | Default | Meaning |", "|---|---|---|"]
    for env_name, text, _ in knobs:
        lines.append(f"| `{env_name}` | {text} | bound for {env_name.split('_', 1)[1].lower().replace('_', ' ')} |")
    lines += ["", "## Runbook", "", "Raise the lease before the step bound, never the other way round:", "",
              "```bash", f"export {knobs[0][0]}={knobs[0][2] * 2}", "```", ""]
    for _ in range(rng.randint(3, 8)):
        lines.append(" ".join(rng.choice(NOUNS + VERBS) for _ in range(rng.randint(8, 16))).capitalize() + ".")
        lines.append("")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------


class Tree:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.files: dict[str, str] = {}
        self.hashes: set[str] = set()

    def add(self, rel: str, text: str) -> int:
        digest = hashlib.sha256(text.encode()).hexdigest()
        if digest in self.hashes:  # keep every file unique (the cache is per content hash)
            comment = "//" if rel.endswith(".go") else "#"
            text += f"{comment} variant {len(self.files)}\n"
            digest = hashlib.sha256(text.encode()).hexdigest()
        self.hashes.add(digest)
        while rel in self.files:  # never overwrite a file already generated
            stem, dot, ext = rel.rpartition(".")
            rel = f"{stem}_{len(self.files)}{dot}{ext}"
        self.files[rel] = text
        return text.count("\n")

    def write(self) -> None:
        for rel, text in self.files.items():
            path = self.root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")


def plain_python(rng: random.Random, names: Names) -> str:
    for _ in range(50):
        text = py_plain(rng, names)
        if not FORBIDDEN.search(text):
            return text
    raise RuntimeError("could not generate a plain Python file without timeout vocabulary")


def generate(out: Path, lines: int, seed: int = 0) -> dict:
    rng = random.Random(seed)
    tree = Tree(out)
    n_services = max(1, min(len(SERVICES), round(lines / 60000) or 1))
    services = rng.sample(SERVICES, n_services)
    all_knobs = {}
    for svc in services:
        kinds = rng.sample(KNOB_KINDS, rng.randint(7, 10))
        if not any("LEASE" == k[0].split("_")[-1] or k[0].startswith("JOB_LEASE") for k in kinds):
            kinds.append(KNOB_KINDS[3])
        all_knobs[svc] = [(f"{svc.upper()}_{k}", t, s) for k, t, s in kinds]

    go_budget = py_budget = 0.45 * lines / n_services
    other_budget = 0.09 * lines / n_services  # env files and the README add the last ~1 %
    counts = {"go": 0, "python": 0, "other": 0}

    for svc in services:
        knobs = all_knobs[svc]
        names = Names(rng)
        # ---- Go: one module per service
        mod = f"github.com/acme/{svc}"
        base = f"go/{svc}"
        g = tree.add(f"{base}/go.mod", f"module {mod}\n\ngo 1.22\n")
        for rel, text in go_config_files(rng, mod, svc, knobs).items():
            g += tree.add(f"{base}/{rel}", text)
        g += tree.add(f"{base}/internal/lease/lease.go", go_lease_file(mod))
        g += tree.add(f"{base}/cmd/{svc}/main.go", go_main_file(mod, svc))
        g += tree.add(f"{base}/internal/handlers/server.go", go_server_file(rng, names, mod, knobs))
        domain_pkgs: list[str] = []
        i = 0
        while g < go_budget:
            i += 1
            roll = rng.random()
            if roll < 0.08:
                g += tree.add(f"{base}/internal/clients/{names.noun()}_client.go",
                              go_client_file(rng, names, mod, knobs, i))
            elif roll < 0.13:
                g += tree.add(f"{base}/internal/worker/{names.noun()}_worker.go",
                              go_worker_file(rng, names, mod, knobs))
            else:
                if not domain_pkgs or rng.random() < 0.2:
                    domain_pkgs.append(names.noun().replace("_", ""))
                    first = True
                else:
                    first = False
                pkg = domain_pkgs[-1] if first else rng.choice(domain_pkgs)
                if not first and f"{base}/internal/{pkg}/errors.go" not in tree.files:
                    first = True
                rel = f"{base}/internal/{pkg}/{'errors' if first else names.noun()}.go"
                g += tree.add(rel, go_domain_file(rng, names, pkg, mod, rng.random() < 0.2, first))
        counts["go"] += g

        # ---- Python: one top-level package per service, with subpackages
        pkg = f"{svc}_svc"
        pbase = f"python/{pkg}"
        p = tree.add(f"{pbase}/__init__.py", f'"""The {svc} service."""\n')
        p += tree.add(f"{pbase}/settings.py", py_settings(rng, knobs, svc))
        p += tree.add(f"{pbase}/lease.py", py_lease(rng, knobs, pkg))
        subs: list[str] = []
        while p < py_budget:
            roll = rng.random()
            if not subs or rng.random() < 0.1:
                sub = names.noun()
                subs.append(sub)
                p += tree.add(f"{pbase}/{sub}/__init__.py", "")
            sub = rng.choice(subs)
            fname = names.noun()
            if roll < 0.5:
                text = plain_python(rng, names)
            elif roll < 0.62:
                text = py_clients(rng, names, knobs, pkg)
            elif roll < 0.72:
                text = py_worker(rng, names, knobs, pkg)
            else:
                text = py_service(rng, names, pkg)
            p += tree.add(f"{pbase}/{sub}/{fname}.py", text)
        counts["python"] += p

        o = tree.add(f"config/{svc}.yaml", yaml_file(rng, svc, knobs))
        o += tree.add(f"docs/{svc}.md", md_file(rng, svc, knobs))
        while o < other_budget:  # per-component config and docs fill the rest
            part = names.noun()
            sub = rng.sample(knobs, rng.randint(2, len(knobs)))
            if rng.random() < 0.6:
                o += tree.add(f"config/{svc}/{part}.yaml", yaml_file(rng, f"{svc}-{part.replace('_', '-')}", sub))
            else:
                o += tree.add(f"docs/{svc}/{part}.md", md_file(rng, f"{svc} {part.replace('_', ' ')}", sub))
        counts["other"] += o
    for rel, text in env_files(rng, all_knobs).items():
        counts["other"] += tree.add(rel, text)
    counts["other"] += tree.add("README.md", "# Generated benchmark tree\n\nServices: "
                                + ", ".join(services) + "\n")
    tree.write()
    py_files = [t for r, t in tree.files.items() if r.endswith(".py") and t.strip()]
    plain = sum(1 for t in py_files if not FORBIDDEN.search(t))
    return {"root": str(out), "seed": seed, "requested_lines": lines, "lines": sum(counts.values()),
            "lines_by_kind": counts, "files": len(tree.files),
            "python_files": len(py_files), "python_files_without_vocabulary": plain}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--lines", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    if args.out.exists() and any(args.out.iterdir()):
        print(f"{args.out} exists and is not empty", file=sys.stderr)
        return 2
    info = generate(args.out, args.lines, args.seed)
    print(f"{info['files']} files, {info['lines']} lines "
          f"(go {info['lines_by_kind']['go']}, python {info['lines_by_kind']['python']}, "
          f"other {info['lines_by_kind']['other']}); "
          f"{info['python_files_without_vocabulary']}/{info['python_files']} Python files "
          f"without timeout/env vocabulary")
    return 0


if __name__ == "__main__":
    sys.exit(main())
