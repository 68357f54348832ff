"""Python extractor: one realistic snippet per shape, exact facts asserted."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from deadline_audit.catalog import load_catalog
from deadline_audit.extract.python import extract_python, may_contribute
from deadline_audit.facts import from_json, to_json


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


def extract(catalog, code: str, module: str = "svc.app", path: str = "svc/app.py"):
    facts = extract_python(path, textwrap.dedent(code).encode(), module, catalog)
    assert from_json(to_json(facts)) == facts  # plain, cacheable data
    return facts


def sites(facts, api=None):
    return [s for s in facts.sites if api is None or s.api == api]


def binding(facts, sym):
    found = [b for b in facts.bindings if b.sym == sym]
    assert found, f"no binding of {sym}: {[b.sym for b in facts.bindings]}"
    return found


def function(facts, sym):
    return next(f for f in facts.functions if f.sym == sym)


def test_env_with_default_through_helper(catalog):
    facts = extract(catalog, """\
        import os

        def env_seconds(name, default):
            return float(os.getenv(name, default))

        MODEL_TIMEOUT = env_seconds("MODEL_TIMEOUT", "30")
        """)
    helper = function(facts, "sym:py:svc.app.env_seconds")
    assert helper.params == ["sym:py:svc.app.env_seconds.name", "sym:py:svc.app.env_seconds.default"]
    assert helper.returns == [{
        "k": "conv", "t": "number",
        "x": {"k": "env", "name": {"k": "ref", "sym": "sym:py:svc.app.env_seconds.name"},
              "default": {"k": "ref", "sym": "sym:py:svc.app.env_seconds.default"}, "at": [4, 18]},
    }]
    [b] = binding(facts, "sym:py:svc.app.MODEL_TIMEOUT")
    assert b.expr == {"k": "call", "fn": {"k": "fnref", "sym": "sym:py:svc.app.env_seconds"},
                      "args": [{"k": "str", "v": "MODEL_TIMEOUT"}, {"k": "str", "v": "30"}], "kw": {}, "at": [6, 17]}
    assert (b.span.line, b.span.column) == (6, 1)
    decl = next(d for d in facts.decls if d.sym == "sym:py:svc.app.MODEL_TIMEOUT")
    assert decl.kind == "const" and decl.type_of == b.expr
    assert any(c.callee == {"k": "fnref", "sym": "sym:py:svc.app.env_seconds"} for c in facts.calls)


def test_direct_env_reads(catalog):
    facts = extract(catalog, """\
        import os
        from os import environ

        A = int(os.environ.get("A_TIMEOUT", 5))
        B = os.environ["B_TIMEOUT"]
        C = environ.get("C_TTL") or "30"
        """)
    [a] = binding(facts, "sym:py:svc.app.A")
    assert a.expr == {"k": "conv", "t": "number", "x": {
        "k": "env", "name": {"k": "str", "v": "A_TIMEOUT"},
        "default": {"k": "num", "v": 5.0, "u": None, "at": [4, 37]}, "at": [4, 9]}}
    [b] = binding(facts, "sym:py:svc.app.B")
    assert b.expr == {"k": "env", "name": {"k": "str", "v": "B_TIMEOUT"}, "default": None, "at": [5, 5]}
    [c] = binding(facts, "sym:py:svc.app.C")
    assert c.expr["k"] == "or" and c.expr["args"][1] == {"k": "str", "v": "30"}
    assert c.expr["args"][0]["name"] == {"k": "str", "v": "C_TTL"}
    assert facts.env_names_read == ["A_TIMEOUT", "B_TIMEOUT", "C_TTL"]


def test_settings_constant_imported_in_another_module(catalog):
    facts = extract(catalog, """\
        import asyncio
        from app.config import MODEL_TIMEOUT
        from app import config
        import app.limits as limits

        async def call(op):
            a = await asyncio.wait_for(op(), MODEL_TIMEOUT)
            async with asyncio.timeout(config.MODEL_TIMEOUT):
                await op()
            return limits.CAP
        """)
    values = [s.value for s in sites(facts)]
    assert values == [{"k": "ref", "sym": "sym:py:app.config.MODEL_TIMEOUT"}] * 2
    assert function(facts, "sym:py:svc.app.call").returns == [{"k": "ref", "sym": "sym:py:app.limits.CAP"}]


def test_relative_import(catalog):
    facts = extract(catalog, """\
        from .config import TIMEOUT
        from .. import settings
        X_TIMEOUT = TIMEOUT
        Y = settings.TIMEOUT
        """, module="svc.models.client", path="svc/models/client.py")
    assert binding(facts, "sym:py:svc.models.client.X_TIMEOUT")[0].expr == {"k": "ref", "sym": "sym:py:svc.models.config.TIMEOUT"}
    assert binding(facts, "sym:py:svc.models.client.Y")[0].expr == {"k": "ref", "sym": "sym:py:svc.settings.TIMEOUT"}


def test_pydantic_settings_with_env_prefix(catalog):
    facts = extract(catalog, """\
        from pydantic import Field
        from pydantic_settings import BaseSettings, SettingsConfigDict

        class Settings(BaseSettings):
            model_config = SettingsConfigDict(env_prefix="APP_")
            model_timeout: float = 120
            lease_ttl: int = Field(30, alias="LEASE_TTL_SECONDS")
            name: str

        settings = Settings()
        """)
    [t] = binding(facts, "sym:py:svc.app.Settings.model_timeout")
    assert t.expr == {"k": "env", "name": {"k": "str", "v": "APP_MODEL_TIMEOUT"},
                      "default": {"k": "num", "v": 120.0, "u": None, "at": [6, 28]}, "at": [6, 5]}
    assert not t.is_default
    [lease] = binding(facts, "sym:py:svc.app.Settings.lease_ttl")
    assert lease.expr["name"] == {"k": "str", "v": "LEASE_TTL_SECONDS"}
    assert lease.expr["default"] == {"k": "num", "v": 30.0, "u": None, "at": [7, 28]}
    [name] = binding(facts, "sym:py:svc.app.Settings.name")
    assert name.expr["default"] is None
    assert facts.env_names_read == ["APP_MODEL_TIMEOUT", "LEASE_TTL_SECONDS", "APP_NAME"]
    field = next(d for d in facts.decls if d.sym == "sym:py:svc.app.Settings.model_timeout")
    assert field.kind == "field" and field.type == "float"
    inst = next(d for d in facts.decls if d.sym == "sym:py:svc.app.settings")
    assert inst.type == "py:svc.app.Settings"


def test_settings_inner_config_prefix(catalog):
    facts = extract(catalog, """\
        from pydantic_settings import BaseSettings

        class Cfg(BaseSettings):
            deadline: float = 5
            class Config:
                env_prefix = "SVC_"
        """)
    assert binding(facts, "sym:py:svc.app.Cfg.deadline")[0].expr["name"] == {"k": "str", "v": "SVC_DEADLINE"}


def test_openai_client_in_init_stored_in_field(catalog):
    facts = extract(catalog, """\
        import openai
        from app.config import settings

        class ModelClient:
            def __init__(self):
                self.client = openai.AsyncOpenAI(timeout=settings.model_timeout)

            async def complete(self, prompt):
                return await self.client.chat.completions.create(messages=prompt, timeout=30)
        """)
    first, second = sites(facts)
    assert first.api == "py:openai.OpenAI.timeout" and first.role == "read_timeout" and first.unit == "s"
    assert first.value == {"k": "field", "x": {"k": "ref", "sym": "sym:py:app.config.settings"}, "name": "model_timeout"}
    assert first.stored_in == {"k": "ref", "sym": "sym:py:svc.app.ModelClient.client"}
    assert first.function == "sym:py:svc.app.ModelClient.__init__"
    assert first.id == "site:svc/app.py:6:42" and first.group == "site:svc/app.py:6:23"
    assert second.api == "py:openai.create.timeout"
    assert second.value == {"k": "num", "v": 30.0, "u": None, "at": [9, 83]}
    decl = next(d for d in facts.decls if d.sym == "sym:py:svc.app.ModelClient.client")
    assert decl.kind == "field" and decl.type == "openai.AsyncOpenAI"
    complete = function(facts, "sym:py:svc.app.ModelClient.complete")
    assert complete.receiver_type == "py:svc.app.ModelClient" and complete.params == ["sym:py:svc.app.ModelClient.complete.prompt"]
    assert {"k": "ref", "sym": "sym:py:svc.app.ModelClient.client"} in complete.uses
    call = next(c for c in facts.calls if c.callee.get("name") == "create")
    assert call.awaited and call.callee["x"] == {
        "k": "field", "x": {"k": "field", "x": {"k": "ref", "sym": "sym:py:svc.app.ModelClient.client"}, "name": "chat"},
        "name": "completions"}


def test_httpx_client_with_nested_timeout(catalog):
    facts = extract(catalog, """\
        import httpx

        client = httpx.AsyncClient(timeout=httpx.Timeout(30, connect=5))
        """)
    by_api = {s.api: s for s in sites(facts)}
    assert set(by_api) == {"py:httpx.Client.timeout", "py:httpx.Timeout", "py:httpx.Timeout.connect"}
    target = {"k": "ref", "sym": "sym:py:svc.app.client"}
    assert all(s.stored_in == target for s in by_api.values())
    assert by_api["py:httpx.Timeout"].value == {"k": "num", "v": 30.0, "u": None, "at": [3, 50]}
    assert by_api["py:httpx.Timeout.connect"].value == {"k": "num", "v": 5.0, "u": None, "at": [3, 62]}
    assert by_api["py:httpx.Timeout.connect"].role == "phase_timeout"
    assert by_api["py:httpx.Client.timeout"].value["fn"] == {"k": "ext", "name": "httpx.Timeout"}
    assert by_api["py:httpx.Timeout"].group == by_api["py:httpx.Timeout.connect"].group == "site:svc/app.py:3:36"


def test_aiohttp_client_timeout(catalog):
    facts = extract(catalog, """\
        import aiohttp
        from app.config import settings

        async def fetch(url):
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=settings.http_total)) as session:
                return await session.get(url)
        """)
    by_api = {s.api: s for s in sites(facts)}
    total = by_api["py:aiohttp.ClientTimeout.total"]
    assert total.role == "transport_deadline"
    assert total.value == {"k": "field", "x": {"k": "ref", "sym": "sym:py:app.config.settings"}, "name": "http_total"}
    assert total.stored_in == {"k": "ref", "sym": "sym:py:svc.app.fetch.session"}
    assert "py:aiohttp.ClientSession.timeout" in by_api


def test_asyncio_timeout_and_wait_for(catalog):
    facts = extract(catalog, """\
        import asyncio

        async def turn(cfg, op):
            async with asyncio.timeout(cfg.deadline):
                await op()
            return await asyncio.wait_for(op(), timeout=cfg.step_timeout)
        """)
    scope, wait = sites(facts)
    assert scope.api == "py:asyncio.timeout" and scope.role == "context_deadline"
    assert scope.value == {"k": "field", "x": {"k": "ref", "sym": "sym:py:svc.app.turn.cfg"}, "name": "deadline"}
    assert (scope.span.line, scope.span.column) == (4, 16)
    assert wait.api == "py:asyncio.wait_for"
    assert wait.value == {"k": "field", "x": {"k": "ref", "sym": "sym:py:svc.app.turn.cfg"}, "name": "step_timeout"}
    assert function(facts, "sym:py:svc.app.turn").called_params == [1]


def test_typed_param_resolves_field(catalog):
    facts = extract(catalog, """\
        import asyncio
        from app.models import Config

        async def turn(cfg: Config):
            async with asyncio.timeout(cfg.deadline):
                pass
        """)
    assert sites(facts)[0].value == {"k": "ref", "sym": "sym:py:app.models.Config.deadline"}
    param = next(d for d in facts.decls if d.sym == "sym:py:svc.app.turn.cfg")
    assert param.type == "py:app.models.Config" and param.index == 0


def test_lease_helper(catalog):
    facts = extract(catalog, """\
        import asyncio

        async def run_with_lease(op, lease_seconds, renew):
            period = lease_seconds / 3

            async def watchdog():
                while True:
                    await asyncio.sleep(period)
                    await renew()

            task = asyncio.create_task(watchdog())
            try:
                return await op()
            finally:
                task.cancel()

        async def model_call():
            return 1

        async def main(client):
            await run_with_lease(lambda: client.complete(), 30, client.renew_lease)
            await run_with_lease(model_call(), lease_seconds=60, renew=None)
        """)
    helper = function(facts, "sym:py:svc.app.run_with_lease")
    assert helper.param_names == ["op", "lease_seconds", "renew"]
    assert helper.timer_params == [1]
    assert helper.called_params == [0, 2]
    assert helper.vocabulary == ["renew", "lease", "watchdog"]
    assert helper.is_async
    watchdog = function(facts, "sym:py:svc.app.run_with_lease.watchdog")
    assert watchdog.enclosing == "sym:py:svc.app.run_with_lease"
    [sleep] = sites(facts, "py:asyncio.sleep")
    assert sleep.role == "sleep" and sleep.function == "sym:py:svc.app.run_with_lease.watchdog"
    assert sleep.value == {"k": "ref", "sym": "sym:py:svc.app.run_with_lease.period"}
    first, second = [c for c in facts.calls if c.callee == {"k": "fnref", "sym": "sym:py:svc.app.run_with_lease"}]
    assert first.awaited and first.function == "sym:py:svc.app.main"
    assert first.args[0] == {"k": "fnref", "sym": "sym:py:svc.app.main.lambda@21:26", "at": [21, 26]}
    assert first.args[1] == {"k": "num", "v": 30.0, "u": None, "at": [21, 53]}
    assert second.args[0]["k"] == "call" and second.args[0]["fn"] == {"k": "fnref", "sym": "sym:py:svc.app.model_call"}
    assert second.kw["lease_seconds"] == {"k": "num", "v": 60.0, "u": None, "at": [22, 54]}
    lam = function(facts, "sym:py:svc.app.main.lambda@21:26")
    assert lam.enclosing == "sym:py:svc.app.main"
    assert lam.returns[0]["fn"] == {"k": "method", "x": {"k": "ref", "sym": "sym:py:svc.app.main.client"}, "name": "complete"}


def test_temporal_activity_options(catalog):
    facts = extract(catalog, """\
        from datetime import timedelta
        from temporalio import workflow

        @workflow.defn
        class Flow:
            @workflow.run
            async def run(self):
                return await workflow.execute_activity(
                    build, start_to_close_timeout=timedelta(minutes=5), heartbeat_timeout=timedelta(seconds=30))
        """)
    close, beat = sites(facts)
    assert close.api.endswith("start_to_close_timeout") and close.role == "context_deadline"
    assert close.value == {"k": "num", "v": 300.0, "u": "s", "at": [9, 43]}
    assert beat.role == "heartbeat" and beat.value == {"k": "num", "v": 30.0, "u": "s", "at": [9, 83]}
    assert close.group == beat.group == "site:svc/app.py:8:22" and close.id != beat.id
    assert close.function == "sym:py:svc.app.Flow.run"


def test_timedelta_of_a_variable(catalog):
    facts = extract(catalog, """\
        import datetime
        LEASE = datetime.timedelta(seconds=LEASE_S, minutes=1)
        """)
    assert binding(facts, "sym:py:svc.app.LEASE")[0].expr == {"k": "op", "op": "add", "args": [
        {"k": "op", "op": "mul", "args": [{"k": "unknown", "text": "LEASE_S"}, {"k": "num", "v": 1.0, "u": "s"}]},
        {"k": "num", "v": 60.0, "u": "s"}]}


def test_implicit_default_site(catalog):
    facts = extract(catalog, """\
        import openai

        def make():
            return openai.OpenAI()
        """)
    [site] = sites(facts)
    assert site.api == "py:openai.OpenAI.timeout" and site.value is None
    assert site.id == "site:svc/app.py:4:12" and site.function == "sym:py:svc.app.make"


def test_constructor_keywords_bind_fields_and_params(catalog):
    facts = extract(catalog, """\
        from dataclasses import dataclass

        @dataclass
        class Options:
            timeout: float = 30.0

        class Agent:
            def __init__(self, step_timeout: float):
                self.step_timeout = step_timeout

        def build(x):
            opts = Options(timeout=x)
            agent = Agent(step_timeout=opts.timeout)
            return agent
        """)
    assert binding(facts, "sym:py:svc.app.Options.timeout")[-1].expr == {"k": "ref", "sym": "sym:py:svc.app.build.x"}
    assert binding(facts, "sym:py:svc.app.Agent.__init__.step_timeout")[0].expr == {
        "k": "ref", "sym": "sym:py:svc.app.Options.timeout"}
    assert binding(facts, "sym:py:svc.app.Agent.step_timeout")[0].expr == {
        "k": "ref", "sym": "sym:py:svc.app.Agent.__init__.step_timeout"}
    opts = next(d for d in facts.decls if d.sym == "sym:py:svc.app.build.opts")
    assert opts.kind == "local" and opts.type == "py:svc.app.Options"


def test_later_defined_function_and_builtins(catalog):
    facts = extract(catalog, """\
        import asyncio

        async def main():
            await asyncio.sleep(min(interval(), 5))

        def interval():
            return 10
        """)
    [site] = sites(facts)
    assert site.value["k"] == "op" and site.value["op"] == "min"
    assert site.value["args"][0]["fn"] == {"k": "fnref", "sym": "sym:py:svc.app.interval"}


def test_syntax_error_is_a_problem(catalog):
    facts = extract(catalog, "import os\nTIMEOUT = (\ndef f(:\n")
    [problem] = facts.problems
    assert problem.line == 3 and problem.column is not None and "syntax" in problem.message
    assert facts.decls == [] and facts.sites == [] and facts.lines == 3


def test_deep_nesting_is_a_problem_not_a_crash(catalog):
    code = "TIMEOUT = " + "+".join(["a"] * 20000) + "\n"
    facts = extract(catalog, code)
    assert facts.problems and facts.problems[0].message == "file too deeply nested to parse"


def test_prefilter(catalog):
    unrelated = b"def add(a, b):\n    return a + b\n\nprint(add(1, 2))\n"
    assert not may_contribute(unrelated, catalog)
    facts = extract_python("m.py", unrelated, "m", catalog)
    assert facts.lines == 4 and facts.decls == [] and facts.functions == []
    assert may_contribute(b"x = os.getenv('A')", catalog)
    assert may_contribute(b"from openai import OpenAI\nclient = OpenAI()", catalog)
    assert may_contribute(b"import json, asyncio as aio\nawait aio.wait_for(x, 3)", catalog)
    # a library's name outside an import names no API the extractor could resolve (it
    # finds no site in such a file): a docstring, a URL, a call of a name never imported
    assert not may_contribute(b"client = OpenAI()", catalog)
    assert not may_contribute(b'"""See https://platform.openai.com/docs: requests made."""\n', catalog)
    assert not may_contribute(b"import openai_helpers\n", catalog)


def test_non_ascii_columns_are_code_points(catalog):
    facts = extract(catalog, """\
        import asyncio
        async def f():
            s = "ééé"; await asyncio.sleep(5)
        """)
    [site] = sites(facts)
    assert (site.span.line, site.span.column) == (3, 22)


def test_conditional_on_the_value_itself_is_value_or_default():
    from deadline_audit.catalog import load_catalog
    from deadline_audit.extract.python import extract_python

    src = b"import os\nraw = os.getenv('T')\nA = float(raw) if raw else 30.0\nB = 5 if raw else 50\n"
    facts = extract_python("m.py", src, "m", load_catalog())
    by_sym = {b.sym: b.expr for b in facts.bindings}
    assert by_sym["sym:py:m.A"]["k"] == "or"
    assert by_sym["sym:py:m.A"]["args"][1]["v"] == 30.0
    # a run-time choice between two values: both are origins, the value is unknown
    assert by_sym["sym:py:m.B"]["k"] == "choice"
    assert [a["v"] for a in by_sym["sym:py:m.B"]["args"]] == [5.0, 50.0]


def test_prefilter_does_not_pass_files_for_generic_keywords_or_class_names():
    from deadline_audit.catalog import load_catalog
    from deadline_audit.extract.python import may_contribute

    catalog = load_catalog()
    assert not may_contribute(b"page = Page(total=3, items=index.next())\nclass Client: pass\n", catalog)
    assert may_contribute(b"import aiohttp\nt = aiohttp.ClientTimeout(total=3)\n", catalog)
    assert may_contribute(b"await r.set(key, me, ex=ttl_s)\n", catalog)


def test_loop_variables_are_elements_of_their_iterable(catalog):
    from deadline_audit.facts import to_json

    facts = extract(catalog, """\
        import yaml
        def make(x): return x
        doc = yaml.safe_load(open("jobs.yaml"))
        specs = [make(spec) for spec in doc["jobs"]]
        pairs = {name: make(entry) for name, entry in doc["pools"].items()}
        nodes = [c for c in c.kids]
        grid = [y for x in doc["rows"] for y in x]
        for job in doc["jobs"]:
            make(job)
        """)
    args = {c.span.line: c.args for c in facts.calls if c.callee.get("sym", "").endswith("make")}
    jobs = {"k": "item", "x": {"k": "ref", "sym": "sym:py:svc.app.doc"}, "key": "jobs"}
    assert args[4] == [{"k": "each", "x": jobs}]
    pools = args[5][0]  # the values of `.items()`
    assert pools["k"] == "each" and pools["x"]["key"] == "pools"
    assert args[9] == [{"k": "ref", "sym": "sym:py:svc.app.job"}]
    assert {"k": "each", "x": jobs} in [b.expr for b in facts.bindings if b.sym == "sym:py:svc.app.job"]
    to_json(facts)  # a name used in its own iterable (`for c in c.kids`) makes no cycle


def test_click_option_defaults_are_the_defaults_of_their_parameters(catalog):
    # the option's identifier names the parameter, else its longest --flag; a default
    # given only to a flag the function does not take binds nothing
    facts = extract(catalog, """
        import click

        @click.command()
        @click.option("--grace", "grace_s", type=int, default=3 * 60)
        @click.option("-d", "--drain-timeout", type=int, default=45)
        @click.option("--verbose", is_flag=True)
        def drain(grace_s: int, drain_timeout: int, verbose: bool) -> None:
            pass
    """)
    grace = binding(facts, "sym:py:svc.app.drain.grace_s")
    assert grace[0].is_default and grace[0].expr["k"] == "op"
    drain = binding(facts, "sym:py:svc.app.drain.drain_timeout")
    assert drain[0].is_default and drain[0].expr["v"] == 45.0
    assert not [b for b in facts.bindings if b.sym == "sym:py:svc.app.drain.verbose"]


def test_thread_arguments_are_kept_as_a_tuple(catalog):
    facts = extract(catalog, """
        import threading

        def keep(lease, stop):
            pass

        def run(lease):
            stop = threading.Event()
            t = threading.Thread(target=keep, args=(lease, stop))
            t.start()
    """)
    thread = next(c for c in facts.calls if c.callee.get("name") == "threading.Thread")
    assert thread.kw["args"]["k"] == "tuple" and len(thread.kw["args"]["items"]) == 2


def test_typer_and_fastapi_parameter_defaults_are_their_markers_defaults(catalog):
    # `typer.Option(900.0, …)`, `Query(default=120)`: the marker's default; a required
    # option (`...`) has none; an executor handed a function defined further down keeps
    # its call (the function is a placeholder until the end of the module)
    facts = extract(catalog, """
        import anyio
        import typer
        from fastapi import Query

        def follow(stop_after: float = typer.Option(900.0, "--stop-after"),
                   token: str = typer.Option(..., "--token")) -> None:
            anyio.run(_follow, stop_after)

        async def page(limit_s: float = Query(default=120)) -> None:
            pass

        async def _follow(stop_after: float) -> None:
            pass
    """)
    assert binding(facts, "sym:py:svc.app.follow.stop_after")[0].expr["v"] == 900.0
    assert not [b for b in facts.bindings if b.sym == "sym:py:svc.app.follow.token"]
    assert binding(facts, "sym:py:svc.app.page.limit_s")[0].expr["v"] == 120.0
    run = next(c for c in facts.calls if c.callee.get("name") == "anyio.run")
    assert run.args[0].get("sym") == "sym:py:svc.app._follow"


def test_overload_stubs_are_left_out_and_positions_still_pair(catalog):
    """`@overload` signatures never run (the implementation replaces them): no function,
    parameter or site comes from them, and every other line and column stays right."""
    facts = extract(catalog, """\
        import asyncio
        import typing
        from typing import overload

        class Poller:
            @overload
            async def wait(self, job: str, grace: float = 900.0) -> str: ...
            @typing.overload
            async def wait(
                self, job: int, grace: float = 900.0,
            ) -> int:
                await asyncio.sleep(grace)

            async def wait(self, job, grace: float = 45.0):
                s = "ééé"; await asyncio.sleep(grace)
                return job

        class Shape(typing.Protocol):
            @overload
            def area(self) -> float: ...
        """)
    waits = [f for f in facts.functions if f.sym.endswith("Poller.wait")]
    assert [(f.span.line, f.param_names) for f in waits] == [(14, ["job", "grace"])]
    [site] = sites(facts)
    assert (site.span.line, site.span.column) == (15, 26)
    assert not [f for f in facts.functions if f.sym.endswith("Shape.area")]
    assert not facts.problems


def test_stub_stripping_keeps_every_other_line_byte_for_byte():
    import ast

    from deadline_audit.extract.py_stubs import strip_stubs

    text = ("class A:\r\n    @overload\r\n    def f(self) -> int: ...\r\n\r\n"
            "    def f(self):  # the one that runs\r\n        return 1\r\n")
    tree = ast.parse(text)
    out = strip_stubs(tree, text, frozenset({"overload"}))
    assert out is not None
    assert out.split("\r\n") == ["class A:", "    pass", "", "", "    def f(self):  # the one that runs",
                                 "        return 1", ""]
    assert [type(s).__name__ for s in tree.body[0].body] == ["Pass", "FunctionDef"]
    assert strip_stubs(ast.parse("def f(): pass\n"), "def f(): pass\n", frozenset({"overload"})) is None


@given(st.sets(st.text(alphabet="abc_", min_size=1, max_size=4), min_size=1, max_size=8),
       st.text(alphabet="abc_ =x", max_size=40))
def test_prefilter_trie_finds_what_a_plain_alternation_finds(words, haystack):
    import re

    from deadline_audit.extract.py_index import _trie

    encoded = {w.encode() for w in words}
    plain = re.compile(b"|".join(re.escape(w) for w in sorted(encoded, key=len, reverse=True)))
    assert (re.search(_trie(encoded), haystack.encode()) is not None) == (plain.search(haystack.encode()) is not None)
    as_keywords = re.compile(rb"\b(?:" + plain.pattern + rb")\s*=(?!=)")
    trie_keywords = re.compile(rb"\b" + _trie(encoded, substrings=False) + rb"\s*=(?!=)")
    assert (trie_keywords.search(haystack.encode()) is None) == (as_keywords.search(haystack.encode()) is None)


# --- libcst nodes built plainly during the parse (py_fastnodes.py) ---------------------------

def _python_sources() -> list[Path]:
    here = Path(__file__).resolve().parent
    files = sorted((here.parent / "fixtures").rglob("*.py")) + sorted(here.glob("*.py"))
    assert len(files) > 100  # the whole fixture set, not a sample that could be empty
    return files


def test_plainly_built_trees_equal_libcst_own():
    import libcst as cst

    from deadline_audit.extract.py_fastnodes import plain_node_construction

    for path in _python_sources():
        source = path.read_bytes()
        own = cst.parse_module(source)
        with plain_node_construction():
            plain = cst.parse_module(source)
        assert plain.deep_equals(own), path
        assert plain.code == own.code, path


def test_plain_construction_is_undone_after_the_parse():
    import libcst as cst

    from deadline_audit.extract.py_fastnodes import plain_node_construction

    before = cst.Call.__init__, cst.Name.__init__, cst.CSTNode.__post_init__
    with plain_node_construction():
        assert cst.Name.__init__ is not before[1]
        node = cst.Name("inside")  # positional, as the dataclass allows
        assert node.value == "inside" and node.lpar == ()
    assert (cst.Call.__init__, cst.Name.__init__, cst.CSTNode.__post_init__) == before
    with pytest.raises(cst.CSTValidationError):  # validation is back for hand-built nodes
        cst.Name("not an identifier")
