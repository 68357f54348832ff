"""The timeout-flow graph: values resolved along flows, env layers and profiles, the
resolution policy (unresolved stays None, no link), and the `graph`/`why` commands."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import networkx as nx
import pytest
from typer.testing import CliRunner

from analysis_support import build
from deadline_audit import pipeline
from deadline_audit.cli import app
from deadline_audit.config import load_config


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return root


def graph_of(root: Path):
    return pipeline.build([root], load_config([root]), use_cache=False).graph


def site_at(graph, suffix: str, line: int) -> dict:
    matches = [a for n, a in graph.g.nodes(data=True)
               if a.get("kind") == "site" and str(a.get("path", "")).endswith(suffix) and a.get("line") == line]
    assert matches, f"no site at {suffix}:{line}"
    return matches[0]


GO_MOD = "module example.com/app\n\ngo 1.22\n"


def test_go_helper_constant_in_other_package_and_struct_field_set_in_constructor(tmp_path):
    root = write_tree(tmp_path, {
        "go.mod": GO_MOD,
        "defaults/defaults.go": """
            package defaults

            import "time"

            const CallTimeout = 90 * time.Second
        """,
        "conf/env.go": """
            package conf

            import (
                "os"
                "strconv"
                "time"

                "example.com/app/defaults"
            )

            type Settings struct{ Call time.Duration }

            func seconds(name string, def time.Duration) time.Duration {
                raw := os.Getenv(name)
                n, err := strconv.Atoi(raw)
                if err != nil || n <= 0 {
                    return def
                }
                return time.Duration(n) * time.Second
            }

            func Load() Settings {
                return Settings{Call: seconds("CALL_TIMEOUT_SECONDS", defaults.CallTimeout)}
            }
        """,
        "api/client.go": """
            package api

            import (
                "net/http"

                "example.com/app/conf"
            )

            type Client struct{ http *http.Client }

            func New(s conf.Settings) *Client {
                c := &Client{}
                c.http = &http.Client{Timeout: s.Call}
                return c
            }
        """,
        ".env": "CALL_TIMEOUT_SECONDS=600\n",
        ".env.staging": "CALL_TIMEOUT_SECONDS=30\n",
    })
    graph = graph_of(root)
    site = site_at(graph, "api/client.go", 13)
    assert site["role"] == "transport_deadline"
    assert site["effective_seconds"] == 600.0  # the layer, read as integer seconds
    assert site["default_seconds"] == 90.0  # the constant in another package, through the helper
    env = graph.g.nodes["env:CALL_TIMEOUT_SECONDS"]
    assert [(lay["raw"], lay["wins"]) for lay in env["layers"]] == [("600", True)]
    assert [(p["profile"], p["raw"]) for p in env["profiles"]] == [("staging", "30")]
    assert nx.has_path(graph.g, "env:CALL_TIMEOUT_SECONDS", next(
        n for n, a in graph.g.nodes(data=True) if a is site))


def test_value_only_in_a_profile_is_effective_when_no_layer_sets_it(tmp_path):
    root = write_tree(tmp_path, {
        "go.mod": GO_MOD,
        "main.go": """
            package main

            import (
                "context"
                "os"
                "time"
            )

            func main() {
                d, _ := time.ParseDuration(os.Getenv("JOB_DEADLINE"))
                ctx, cancel := context.WithTimeout(context.Background(), d)
                defer cancel()
                <-ctx.Done()
            }
        """,
        ".env.production": "JOB_DEADLINE=45m\n",
        ".env.example": "JOB_DEADLINE=1m\n",
    })
    site = site_at(graph_of(root), "main.go", 11)
    assert site["effective_seconds"] == 2700.0
    assert site["default_seconds"] is None  # nothing set, no default: unresolved


def test_unresolved_shapes_stay_unresolved(tmp_path):
    root = write_tree(tmp_path, {
        "go.mod": GO_MOD,
        "svc/svc.go": """
            package svc

            import (
                "net/http"
                "time"
            )

            type Timeouts interface{ Call() time.Duration }

            func viaInterface(t Timeouts) *http.Client {
                return &http.Client{Timeout: t.Call()}
            }

            func twoValues(fast bool) *http.Client {
                d := 10 * time.Second
                if fast {
                    d = 2 * time.Second
                }
                return &http.Client{Timeout: d}
            }
        """,
    })
    graph = graph_of(root)
    assert site_at(graph, "svc/svc.go", 11)["effective_seconds"] is None  # interface dispatch
    assert site_at(graph, "svc/svc.go", 19)["effective_seconds"] is None  # two different values


def test_graph_command_exports_env_layers_default_and_flows_to_every_site():
    runner = CliRunner()
    result = runner.invoke(app, ["graph", "fixtures/demo", "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)["graph"]
    nodes = {n["id"]: n for n in data["nodes"]}
    env = nodes["env:MODEL_TIMEOUT"]
    assert [(lay["path"], lay["raw"]) for lay in env["layers"]] == [
        ("fixtures/demo/engine/.env", "30m"), ("fixtures/demo/engine/config/.env", "30m")]
    assert {r["default_seconds"] for r in env["reads"]} == {120.0}
    g = nx.node_link_graph(data, edges="edges", directed=True, multigraph=True)
    reached = nx.descendants(g, "env:MODEL_TIMEOUT")
    transport = {n for n in reached if nodes[n].get("role") == "transport_deadline"}
    leases = {n for n in reached if nodes[n].get("role") == "lease"}
    assert {(nodes[n]["path"].rsplit("/", 1)[-1], nodes[n]["line"]) for n in transport} == {
        ("client.go", 36), ("openai.go", 20)}
    assert {nodes[n]["line"] for n in leases} == {34, 44}  # plan and model_call; tool_call reads TOOL_TIMEOUT
    assert all(nodes[n]["value_seconds"] == 1800.0 for n in transport | leases)


@pytest.mark.parametrize("fmt", ["dot", "mermaid", "graphml"])
def test_graph_command_other_formats(fmt):
    result = CliRunner().invoke(app, ["graph", "fixtures/demo/engine", "--format", fmt])
    assert result.exit_code == 0, result.output
    assert "MODEL_TIMEOUT" in result.stdout


def test_why_prints_the_chain_and_the_rule_verdicts():
    result = CliRunner().invoke(app, ["why", "fixtures/demo/engine/internal/models/client.go:36", "fixtures/demo"])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "role=transport_deadline" in out
    assert "fixtures/demo/engine/config/.env:1 = 30m (wins)" in out
    assert "default 120 s" in out
    assert "models.Config.Timeout" in out
    assert "DA101 fires: lease at fixtures/demo/engine/internal/agents/loop.go:44" in out
    assert "DA101 does not fire: lease at fixtures/demo/engine/internal/agents/loop.go:55" in out


def test_demo_graph_builds_without_input_errors():
    assert build("demo").errors == []


def test_python_helper_constant_in_other_module_and_attribute_set_in_constructor(tmp_path):
    root = write_tree(tmp_path, {
        "app/__init__.py": "",
        "app/defaults.py": "UPSTREAM_TIMEOUT = 45.0\n",
        "app/settings.py": """
            import os

            from app.defaults import UPSTREAM_TIMEOUT


            def seconds(name, default):
                raw = os.environ.get(name)
                return float(raw) if raw else default


            TIMEOUT = seconds("UPSTREAM_TIMEOUT_S", UPSTREAM_TIMEOUT)
        """,
        "app/client.py": """
            import httpx

            from app import settings


            class Upstream:
                def __init__(self, timeout: float) -> None:
                    self.timeout = timeout

                async def fetch(self, url: str) -> bytes:
                    async with httpx.AsyncClient() as client:
                        resp = await client.get(url, timeout=self.timeout)
                        return resp.content


            UPSTREAM = Upstream(settings.TIMEOUT)
        """,
        ".env": "UPSTREAM_TIMEOUT_S=600\n",
    })
    graph = graph_of(root)
    site = site_at(graph, "app/client.py", 12)
    assert site["role"] == "read_timeout"
    assert site["effective_seconds"] == 600.0  # the env layer wins
    assert site["default_seconds"] == 45.0  # the constant in another module, through the helper


def test_python_pydantic_settings_value_only_in_a_layer(tmp_path):
    root = write_tree(tmp_path, {
        "svc/__init__.py": "",
        "svc/config.py": """
            from pydantic_settings import BaseSettings, SettingsConfigDict


            class Settings(BaseSettings):
                model_config = SettingsConfigDict(env_prefix="SVC_")
                job_deadline: float = 30


            settings = Settings()
        """,
        "svc/jobs.py": """
            import asyncio

            from svc.config import settings


            async def run(job):
                async with asyncio.timeout(settings.job_deadline):
                    await job()
        """,
        "deploy/.env": "SVC_JOB_DEADLINE=900\n",
    })
    site = site_at(graph_of(root), "svc/jobs.py", 7)
    assert site["role"] == "context_deadline"
    assert site["effective_seconds"] == 900.0
    assert site["default_seconds"] == 30.0


def test_python_unresolved_shapes_stay_unresolved(tmp_path):
    root = write_tree(tmp_path, {
        "w/__init__.py": "",
        "w/work.py": """
            import asyncio


            async def run(job, options, fast: bool):
                async with asyncio.timeout(options.deadline):
                    await job()
                limit = 5 if fast else 50
                await asyncio.wait_for(job(), timeout=limit)
        """,
    })
    graph = graph_of(root)
    assert site_at(graph, "w/work.py", 5)["effective_seconds"] is None  # attribute of an unknown object
    assert site_at(graph, "w/work.py", 8)["effective_seconds"] is None  # a value chosen at run time


def test_terminal_writes_link_to_their_context_and_its_derivation():
    g = build("demo").graph.g
    writes = {a["path"].rsplit("/", 1)[-1] + f":{a['line']}": n for n, a in g.nodes(data=True)
              if a.get("role") == "terminal_write" and a.get("label") == "FinishTurn"}
    assert set(writes) == {"legacy.go:39", "durable.go:27"}

    def context_of(write):
        (ctx,) = [v for _, v, k in g.out_edges(write, keys=True) if k == "writes_under"]
        return ctx

    legacy = context_of(writes["legacy.go:39"])
    assert g.nodes[legacy]["cancellable_by_client"] is True
    roots = [n for n in nx.ancestors(g, legacy) if g.nodes[n].get("kind") == "ctx" and g.in_degree(n) == 0]
    assert [(g.nodes[n]["label"], g.nodes[n]["line"]) for n in roots] == [("r.Context()", 30)]
    durable = context_of(writes["durable.go:27"])
    assert g.nodes[durable]["cancellable_by_client"] is False
    assert any(g.nodes[n]["label"] == "context.Background()" for n in nx.ancestors(g, durable))


def test_recursive_helpers_resolve_without_blowing_up(tmp_path):
    """A helper that calls itself twice (`f(n-1) + f(n-2)`) used to be looked through 40
    levels deep: 2**40 evaluations (values and sources alike). A recursive helper's value is
    unknown; a plain helper still resolves."""
    root = write_tree(tmp_path, {
        "svc.py": """
            import requests


            def backoff(n):
                if n <= 0:
                    return 1
                return backoff(n - 1) + backoff(n - 2)


            def spin(n):
                return spin(n) * 2


            def pad(seconds):
                return seconds + 1


            def fetch(url):
                return requests.get(url, timeout=backoff(3) + spin(2))


            def fetch_padded(url):
                return requests.get(url, timeout=pad(6))
        """,
    })
    graph = graph_of(root)
    assert site_at(graph, "svc.py", 19)["effective_seconds"] is None
    assert site_at(graph, "svc.py", 23)["effective_seconds"] == 7


def test_graph_export_is_the_same_whatever_the_hash_seed():
    # one payload matches two receivers equally well (a Go struct and a pydantic model, each
    # sharing three of its four keys): the links, and so the edges, once came out in an order
    # that depended on iterating a set of keys, i.e. on PYTHONHASHSEED
    import os
    import subprocess
    import sys

    tree = Path(__file__).resolve().parents[1] / "fixtures" / "da40x_config" / "shared_keys"
    outputs = set()
    for seed in range(1, 7):
        env = {**os.environ, "PYTHONHASHSEED": str(seed)}
        out = subprocess.run([sys.executable, "-m", "deadline_audit", "graph", str(tree), "--format", "json",
                              "--no-cache"], capture_output=True, text=True, env=env, check=True)
        edges = json.loads(out.stdout)["graph"]["edges"]
        assert sum(e["kind"] == "sent_as" for e in edges) == 4  # run_timeout and grace_period, to each receiver
        outputs.add(out.stdout)
    assert len(outputs) == 1


def test_reachable_with_a_limit_keeps_the_nearest_functions_in_a_fixed_order():
    # the DA102/DA103 queries cap how far they follow calls; which functions make the cut
    # must not depend on the order a set iterates in (string hashes change per process)
    from analysis_support import build

    graph = build("da103_keeper_loop").graph
    campaign = "sym:py:janitor.leader.Leadership.campaign"
    assert graph.reachable([campaign], limit=2) == {campaign, "sym:py:janitor.leader.Leadership._serve"}
    assert graph.reachable([campaign], limit=3) == {
        campaign, "sym:py:janitor.leader.Leadership._serve", "sym:py:janitor.leader.Leadership._keep"}
