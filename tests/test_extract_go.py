"""Go extractor: realistic snippets, exact facts."""

from __future__ import annotations

from pathlib import Path

import pytest

from deadline_audit.catalog import load_catalog
from deadline_audit.extract.go import extract_go, extract_gomod
from deadline_audit.facts import FileFacts, from_json, to_json

MOD = "example.com/agent"
IP = "example.com/agent/internal/models"
P = f"sym:go:{IP}."
SNIPPETS = Path(__file__).parent / "go_snippets"


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


def extract(catalog, src: str | bytes, ip: str = IP, path: str = "m/x.go") -> FileFacts:
    data = src.encode() if isinstance(src, str) else src
    facts = extract_go(path, data, ip, MOD, catalog)
    assert from_json(to_json(facts)) == facts  # plain data, round-trips
    return facts


def strip_at(e):
    if isinstance(e, dict):
        return {k: strip_at(v) for k, v in e.items() if k != "at"}
    if isinstance(e, list):
        return [strip_at(v) for v in e]
    return e


def decl(facts, sym):
    hits = [d for d in facts.decls if d.sym == sym]
    assert len(hits) == 1, (sym, [d.sym for d in facts.decls])
    return hits[0]


def fn(facts, sym):
    hits = [f for f in facts.functions if f.sym == sym]
    assert len(hits) == 1, (sym, [f.sym for f in facts.functions])
    return hits[0]


def bindings(facts, sym):
    return [strip_at(b.expr) for b in facts.bindings if b.sym == sym]


def ref(name):
    return {"k": "ref", "sym": name if name.startswith("sym:") else P + name}


def ns(seconds):
    return {"k": "num", "v": seconds * 1e9, "u": "ns"}


# --- the model client file ------------------------------------------------------------


@pytest.fixture(scope="module")
def client(catalog):
    return extract(catalog, (SNIPPETS / "client.go").read_bytes(), path="internal/models/client.go")


def test_imports_and_file(client):
    assert client.kind == "go" and client.module == IP
    assert client.lines == 52
    assert client.problems == []


def test_env_helper_with_default(client):
    f = fn(client, P + "envDuration")
    assert f.params == [P + "envDuration.key", P + "envDuration.def"]
    assert f.param_names == ["key", "def"]
    assert f.result_type == "time.Duration"
    assert [strip_at(r) for r in f.returns] == [ref("envDuration.def"), ref("envDuration.def"), ref("envDuration.d")]
    env = bindings(client, P + "envDuration.v")
    assert env == [{"k": "env", "name": ref("envDuration.key"), "default": None}]
    assert bindings(client, P + "envDuration.d") == [{"k": "conv", "t": "parse_duration", "x": ref("envDuration.v")}]
    assert decl(client, P + "envDuration.def").index == 1
    assert decl(client, P + "envDuration.def").type == "time.Duration"
    (getenv,) = [c for c in client.calls if c.callee == {"k": "ext", "name": "os.Getenv"}]
    assert getenv.function == P + "envDuration"


def test_env_helper_call(client):
    (b,) = [b for b in client.bindings if b.sym == P + "modelTimeout"]
    assert b.function is None
    assert b.expr == {"k": "call", "fn": {"k": "fnref", "sym": P + "envDuration"},
                      "args": [{"k": "str", "v": "MODEL_TIMEOUT", "at": [39, 32]},
                               {"k": "num", "v": 120e9, "u": "ns", "at": [39, 49]}],
                      "at": [39, 20]}
    (call,) = [c for c in client.calls if c.callee == {"k": "fnref", "sym": P + "envDuration"}]
    assert (call.span.line, call.span.column) == (39, 20)
    assert decl(client, P + "modelTimeout").type == "time.Duration"


def test_config_struct_tags(client):
    d = decl(client, P + "Config.Timeout")
    assert d.kind == "field" and d.type == "time.Duration"
    assert d.tags == {"env": "MODEL_TIMEOUT", "json": "timeout,omitempty"}
    assert decl(client, P + "Config.Model.Name").type == "string"
    assert decl(client, P + "Client.http").type == "net/http.Client"
    assert decl(client, P + "Client.client").type == "github.com/openai/openai-go.Client"


def test_constructor_http_client_site(client):
    (site,) = [s for s in client.sites if s.api == "go:net/http.Client.Timeout"]
    assert site.id == "site:internal/models/client.go:42:55"
    assert site.role == "transport_deadline" and site.unit == "ns"
    assert site.value == ref("Config.Timeout")
    assert site.stored_in == ref("Client.http")
    assert site.group == "lit:internal/models/client.go:42:34"
    assert site.function == P + "NewClient"
    assert bindings(client, P + "Client.http") == [
        {"k": "obj", "type": "net/http.Client", "fields": {"Timeout": ref("Config.Timeout")}}]
    assert bindings(client, "sym:go:net/http.Client.Timeout") == [ref("Config.Timeout")]
    f = fn(client, P + "NewClient")
    assert f.result_type == IP + ".Client"
    assert f.uses == [ref("Config.Timeout")]


def test_request_timeout_option(client):
    (site,) = [s for s in client.sites if s.api == "go:github.com/openai/openai-go/option.WithRequestTimeout"]
    assert site.value == ref("Config.Timeout")
    assert site.stored_in == ref("Client.client")
    assert site.function == P + "Client.init"
    assert site.id == "site:internal/models/client.go:46:56"
    f = fn(client, P + "Client.init")
    assert f.receiver_type == IP + ".Client" and f.params == []
    assert ref("Client.cfg") in f.uses and ref("Config.Timeout") in f.uses


def test_context_with_timeout_and_other_package_constant(client):
    (site,) = [s for s in client.sites if s.api == "go:context.WithTimeout"]
    assert site.value == {"k": "num", "v": 30e9, "u": "ns", "at": [47, 59]}
    assert site.stored_in == ref("Client.init.ctx")
    assert bindings(client, P + "Client.init.t") == [ref("sym:go:example.com/agent/internal/config.DefaultTimeout")]
    (call,) = [c for c in client.calls if c.callee == {"k": "ext", "name": "context.WithTimeout"}]
    assert not call.in_defer
    # `defer cancel()` calls a local func value: no module/catalog callee, no CallFact
    assert [c for c in client.calls if c.in_defer] == []


# --- lease helper, closures -----------------------------------------------------------

LEASE = """package agents

import (
	"context"
	"time"

	"example.com/agent/internal/models"
)

// runWithLease supervises fn; a comment mentioning heartbeat does not count.
func runWithLease(ctx context.Context, kind string, d time.Duration, fn func(context.Context) error) error {
	period := d
	timer := time.NewTimer(period)
	defer timer.Stop()
	done := make(chan error, 1)
	go func() { done <- fn(ctx) }()
	for {
		select {
		case err := <-done:
			return err
		case <-timer.C:
			if !renewLease(ctx, kind) {
				return context.DeadlineExceeded
			}
			timer.Reset(d)
		}
	}
}

func (a *Agent) step(ctx context.Context) error {
	c := models.NewClient(a.cfg)
	return runWithLease(ctx, "model_call", a.cfg.StepTimeout, func(ctx context.Context) error {
		return c.Call(ctx)
	})
}
"""
AIP = "example.com/agent/internal/agents"
A = f"sym:go:{AIP}."


@pytest.fixture(scope="module")
def lease(catalog):
    return extract(catalog, LEASE, ip=AIP, path="internal/agents/loop.go")


def test_lease_helper_features(lease):
    f = fn(lease, A + "runWithLease")
    assert f.param_names == ["ctx", "kind", "d", "fn"]
    assert f.timer_params == [2]
    assert f.called_params == [3]
    assert f.vocabulary == ["renew", "lease"]
    assert decl(lease, A + "runWithLease.fn").type is None
    assert decl(lease, A + "runWithLease.d").index == 2
    timers = [s for s in lease.sites if s.role == "timer"]
    assert [(s.api, strip_at(s.value)) for s in timers] == [
        ("go:time.NewTimer", ref(A + "runWithLease.period")),
        ("go:time.Timer.Reset", ref(A + "runWithLease.d")),
    ]
    assert timers[0].stored_in == ref(A + "runWithLease.timer")
    # the goroutine's closure, with its own FunctionFact
    (lit,) = [x for x in lease.functions if x.enclosing == A + "runWithLease"]
    assert lit.sym == A + "runWithLease.func@16:5"
    (go,) = [c for c in lease.calls if c.in_go]
    assert go.callee == {"k": "fnref", "sym": A + "runWithLease.func@16:5"}
    assert go.function == A + "runWithLease"


def test_call_passing_func_literal(lease):
    (call,) = [c for c in lease.calls if c.callee == {"k": "fnref", "sym": A + "runWithLease"}]
    assert call.function == A + "Agent.step"
    assert [strip_at(a) for a in call.args] == [
        ref(A + "Agent.step.ctx"),
        {"k": "str", "v": "model_call"},
        # the receiver's type is known (Agent.cfg), Agent's fields are not declared here
        {"k": "field", "x": ref(A + "Agent.cfg"), "name": "StepTimeout"},
        {"k": "fnref", "sym": A + "Agent.step.func@32:60"},
    ]
    lit = fn(lease, A + "Agent.step.func@32:60")
    assert lit.enclosing == A + "Agent.step"
    assert lit.params == [A + "Agent.step.func@32:60.ctx"]
    (inner,) = [c for c in lease.calls if c.function == lit.sym]
    assert inner.callee == {"k": "method", "x": ref(A + "Agent.step.c"), "name": "Call"}
    c = decl(lease, A + "Agent.step.c")
    assert c.type is None
    assert strip_at(c.type_of) == {"k": "call", "fn": {"k": "fnref", "sym": f"sym:go:{IP}.NewClient"},
                                   "args": [ref(A + "Agent.cfg")]}
    assert fn(lease, A + "Agent.step").receiver_type == AIP + ".Agent"


# --- servers, Temporal, literals ------------------------------------------------------

SERVER = """package main

import (
	"net/http"
	"time"

	"go.temporal.io/sdk/workflow"
)

const maxWait = 2 * 60 * time.Second

func main() {
	srv := &http.Server{Addr: ":8080", WriteTimeout: 5 * time.Minute, ReadTimeout: 0x10 * time.Second}
	srv.IdleTimeout = 1_500 * time.Millisecond
	_ = srv.ListenAndServe()
}

func Workflow(ctx workflow.Context) error {
	opts := workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Minute,
		HeartbeatTimeout:    time.Duration(30) * time.Second,
	}
	ctx = workflow.WithActivityOptions(ctx, opts)
	return nil
}
"""


@pytest.fixture(scope="module")
def server(catalog):
    return extract(catalog, SERVER, ip=MOD, path="main.go")


def test_http_server_sites(server):
    by_api = {s.api: s for s in server.sites}
    w = by_api["go:net/http.Server.WriteTimeout"]
    assert w.value == {"k": "num", "v": 300e9, "u": "ns", "at": [13, 51]}
    assert w.id == "site:main.go:13:51" and w.role == "server_write_deadline"
    assert w.stored_in == ref(f"sym:go:{MOD}.main.srv")
    assert w.function == f"sym:go:{MOD}.main"
    r = by_api["go:net/http.Server.ReadTimeout"]
    assert strip_at(r.value) == ns(16) and r.group == w.group == "lit:main.go:13:10"
    idle = by_api["go:net/http.Server.IdleTimeout"]
    assert strip_at(idle.value) == ns(1.5) and idle.stored_in == ref(f"sym:go:{MOD}.main.srv")
    assert bindings(server, "sym:go:net/http.Server.IdleTimeout") == [ns(1.5)]
    assert bindings(server, f"sym:go:{MOD}.maxWait") == [ns(120)]
    assert decl(server, f"sym:go:{MOD}.maxWait").kind == "const"


def test_temporal_options_pair(server):
    sites = [s for s in server.sites if s.api.startswith("go:go.temporal.io/")]
    assert [s.role for s in sites] == ["context_deadline", "heartbeat"]
    assert sites[0].group == sites[1].group == "lit:main.go:19:10"
    assert strip_at(sites[0].value) == ns(600)
    assert strip_at(sites[1].value) == {"k": "op", "op": "mul", "args": [
        {"k": "conv", "t": "go_duration", "x": {"k": "num", "v": 30.0, "u": None}}, ns(1)]}
    assert sites[0].stored_in == ref(f"sym:go:{MOD}.Workflow.opts")
    assert decl(server, f"sym:go:{MOD}.Workflow.opts").type == "go.temporal.io/sdk/workflow.ActivityOptions"


def test_syntax_error_keeps_other_facts(catalog):
    src = """package x

import "time"

const Short = 3 * time.Second

func broken() {
	x := (1 +
}

func ok() { time.Sleep(Short) }
"""
    facts = extract(catalog, src, ip="example.com/agent/x")
    assert [(p.message, p.line, p.column) for p in facts.problems] == [("syntax error", 8, 2)]
    assert bindings(facts, "sym:go:example.com/agent/x.Short") == [ns(3)]
    assert [s.api for s in facts.sites] == ["go:time.Sleep"]


def test_non_ascii_columns(catalog):
    src = 'package x\n\nimport "time"\n\nvar _ = "héllo→"; var t = map[string]int{"ü": 1}; var d = 2 * time.Second\n'
    facts = extract(catalog, src, ip="example.com/agent/x")
    (b,) = [b for b in facts.bindings if b.sym == "sym:go:example.com/agent/x.d"]
    assert b.expr["at"] == [5, 59]
    assert (b.span.line, b.span.column, b.span.end_column) == (5, 55, 74)


# --- imports, resolution details ------------------------------------------------------

MISC = """package config

import (
	"os"
	"strconv"
	"time"
	_ "embed"
	. "fmt"
	yaml "gopkg.in/yaml.v3"
	"github.com/go-chi/chi/v5"
	cfgpkg "example.com/agent/internal/settings"
)

type Kind int

const (
	KindA Kind = iota
	KindB
)

const DefaultTimeout = 2 * time.Minute

type Model struct{ Timeout time.Duration }

type Config struct {
	Model Model
	Limit time.Duration `yaml:"limit" env:"LIMIT"`
	*cfgpkg.Base
}

func Load() Config {
	var cfg Config
	d := DefaultTimeout
	if s := os.Getenv("STEP_TIMEOUT"); s != "" {
		n, _ := strconv.Atoi(s)
		d = time.Duration(n) * time.Second
	}
	if d <= 0 {
		d = DefaultTimeout
	}
	cfg.Model.Timeout = min(d, time.Hour)
	cfg.Limit = cfgpkg.Limit
	secs := d.Seconds()
	u := yaml.Unmarshal
	r := chi.NewRouter()
	_, _ = u, r
	_ = secs
	return cfg
}
"""
CIP = "example.com/agent/internal/config"
C = f"sym:go:{CIP}."


@pytest.fixture(scope="module")
def misc(catalog):
    facts = extract(catalog, MISC, ip=CIP, path="internal/config/config.go")
    assert facts.problems == []
    return facts


def test_iota_and_constants(misc):
    assert bindings(misc, C + "KindA") == [{"k": "num", "v": 0.0, "u": None}]
    assert bindings(misc, C + "KindB") == [{"k": "num", "v": 1.0, "u": None}]
    assert decl(misc, C + "KindB").type == CIP + ".Kind"
    assert bindings(misc, C + "DefaultTimeout") == [ns(120)]


def test_struct_decls(misc):
    assert decl(misc, C + "Config.Limit").tags == {"yaml": "limit", "env": "LIMIT"}
    base = decl(misc, C + "Config.Base")
    assert base.embedded and base.type == "example.com/agent/internal/settings.Base"
    assert decl(misc, C + "Config.Model").type == CIP + ".Model"


def test_env_fallback_and_chains(misc):
    # `Limit time.Duration `env:"LIMIT"`` is read too: a tagged field is an env read (SPEC §3)
    assert misc.env_names_read == ["LIMIT", "STEP_TIMEOUT"]
    assert bindings(misc, C + "Load.s") == [{"k": "env", "name": {"k": "str", "v": "STEP_TIMEOUT"}, "default": None}]
    assert bindings(misc, C + "Load.n") == [{"k": "conv", "t": "number", "x": ref(C + "Load.s")}]
    assert bindings(misc, C + "Load.d") == [
        ref(C + "DefaultTimeout"),
        {"k": "op", "op": "mul", "args": [{"k": "conv", "t": "go_duration", "x": ref(C + "Load.n")}, ns(1)]},
        ref(C + "DefaultTimeout"),
    ]
    # cfg is a `var cfg Config`: the chain cfg.Model.Timeout resolves in-file
    assert bindings(misc, C + "Model.Timeout") == [
        {"k": "op", "op": "min", "args": [ref(C + "Load.d"), ns(3600)]}]
    assert bindings(misc, C + "Config.Limit")[1:] == [ref("sym:go:example.com/agent/internal/settings.Limit")]
    assert bindings(misc, C + "Load.secs") == [{"k": "conv", "t": "seconds_of", "x": ref(C + "Load.d")}]
    assert decl(misc, C + "Load.cfg").type == CIP + ".Config"


def test_import_aliases(misc):
    # default alias of gopkg.in/yaml.v3 and of a /v5 path; `_` and `.` imports are ignored
    assert [c for c in misc.calls if c.callee["k"] == "ext"] == [
        c for c in misc.calls if c.callee == {"k": "ext", "name": "os.Getenv"}]
    assert bindings(misc, C + "Load.u") == [ref("sym:go:gopkg.in/yaml.v3.Unmarshal")]
    assert bindings(misc, C + "Load.r") == [
        {"k": "call", "fn": {"k": "ext", "name": "github.com/go-chi/chi/v5.NewRouter"}, "args": []}]
    assert not [b for b in misc.bindings if b.sym.endswith("._")]
    assert decl(misc, C + "Load.secs").type_of is None


def test_unresolved_selector_assignment_emits_nothing(catalog):
    src = "package x\n\nfunc f(c *Other) { c.inner.Timeout = 3 }\nfunc g(o Other) { o.Timeout = 4 }\n"
    facts = extract(catalog, src, ip="example.com/agent/x")
    assert [b.sym for b in facts.bindings] == ["sym:go:example.com/agent/x.Other.Timeout"]


def test_gomod():
    facts = extract_gomod("go.mod", "module example.com/agent // the agent\n\ngo 1.22\n\n"
                                    "require (\n\tgithub.com/openai/openai-go v1.0.0\n)\n"
                                    "bogus line\n")
    assert facts.kind == "gomod" and facts.module == "example.com/agent" and facts.go_version == "1.22"
    assert [(p.message, p.line) for p in facts.problems] == [("go.mod: unknown directive 'bogus'", 8)]
    bad = extract_gomod("go.mod", "go 1.x\nrequire (\n")
    assert [p.line for p in bad.problems] == [1, 2, None]


def test_vocabulary_ignores_comments_only(catalog):
    src = '''package models

func a() {
	// renew the lease here
	x := 1 /* heartbeat */
	_ = x
}

func b(url string) {
	u := "http://renew.example" // a comment, and a word in a string
	_ = u
}

func c() {
	keep := 2
	_ = keep
}
'''
    facts = extract(catalog, src)
    assert fn(facts, P + "a").vocabulary == []
    assert fn(facts, P + "b").vocabulary == ["renew"]
    assert fn(facts, P + "c").vocabulary == []


def test_ascii_and_wide_files_agree_on_ascii_lines(catalog):
    body = '''
func f() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = ctx
}
'''
    head = 'package models\n\nimport (\n\t"context"\n\t"time"\n)\n'
    narrow = extract(catalog, head + "// plain\n" + body)
    wide = extract(catalog, head + "// naïve\n" + body)
    assert to_json(narrow) == to_json(wide)


def test_default_import_alias_follows_go_naming_conventions():
    from deadline_audit.extract.go_text import default_alias

    assert default_alias("github.com/redis/go-redis/v9") == "redis"
    assert default_alias("github.com/openai/openai-go/v2") == "openai"
    assert default_alias("github.com/sashabaranov/go-openai") == "openai"
    assert default_alias("gopkg.in/yaml.v3") == "yaml"
    assert default_alias("net/http") == "http"


def test_env_tagged_field_is_an_env_read(misc):
    """SPEC §3: a field tagged `env:"X"` / `envconfig:"X"` is filled from X, parsed by its type."""
    read = {"k": "env", "name": {"k": "str", "v": "LIMIT"}, "default": None}
    assert bindings(misc, C + "Config.Limit")[0] == {"k": "conv", "t": "parse_duration", "x": read}
