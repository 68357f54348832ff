"""Terminal writes by the meaning of their words and SQL (no graph: names only)."""

from __future__ import annotations

import pytest

from deadline_audit.catalog import load_catalog
from deadline_audit.facts import CallFact, Span
from deadline_audit.terminal_writes import TerminalWrites

WRITES = TerminalWrites(load_catalog(None))


def _call(receiver: list[str], name: str, args: list[dict] | None = None) -> CallFact:
    x = None
    for part in receiver:
        x = {"k": "ref", "sym": f"sym:go:example.com/app.{part}"} if x is None else {"k": "field", "x": x, "name": part}
    callee = {"k": "method", "x": x, "name": name} if x is not None else {"k": "fnref", "sym": f"sym:go:example.com/app.{name}"}
    return CallFact(callee, Span(1, 1, 1, 1), None, list(args or []))


def _ref(name: str) -> dict:
    return {"k": "ref", "sym": f"sym:go:example.com/app.f.{name}"}


@pytest.mark.parametrize("receiver,name,args", [
    (["s", "runs"], "Finish", [_ref("ctx")]),                      # noun on the receiver
    (["self", "_exports"], "complete", [_ref("export"), _ref("outcome")]),
    (["s", "rec"], "Complete", [_ref("ctx"), _ref("transferID")]),  # noun in an argument
    (["repo"], "PersistFinalStatus", [_ref("ctx")]),               # final-state words alone
    ([], "store_final_result", []),
    (["s", "payouts"], "MarkRefunded", [_ref("ctx")]),
    (["s"], "MarkFailed", [_ref("ctx")]),                          # finishing verb + final state
    (["store"], "SetRunStatus", [_ref("ctx")]),
    (["s"], "record_outcome", []),
])
def test_terminal(receiver, name, args):
    assert WRITES.is_terminal(_call(receiver, name, args))


@pytest.mark.parametrize("receiver,name,args", [
    (["span"], "SetStatus", []),                                   # tracing
    (["span"], "End", []),
    (["fut"], "set_result", [_ref("run")]),                        # futures
    (["w"], "WriteHeader", [_ref("status")]),                      # HTTP responses
    (["resp", "Body"], "Close", []),                               # bodies
    (["api"], "close", []),                                        # a resource verb without a work noun in the name
    (["p"], "handleFailedMessage", [_ref("ctx")]),                  # the final state comes before any verb
    (["s", "runs"], "StartRun", [_ref("ctx")]),                    # a beginning
    (["s", "cache"], "save_result", [_ref("run_state")]),          # argument nouns need a finishing verb
    (["s", "metrics"], "RecordJobOutcome", [_ref("ctx")]),         # metrics receiver
])
def test_not_terminal(receiver, name, args):
    assert not WRITES.is_terminal(_call(receiver, name, args))


@pytest.mark.parametrize("sql,expected", [
    ("UPDATE runs SET status = $2 WHERE id = $1", True),
    ("update jobs set finished_at = now(), state = 'failed' where id = $1", True),
    ("UPDATE batches SET lease_until = now() WHERE id = $1 AND status = 'processing'", False),
    ("UPDATE runs SET status = 'running', started_at = now() WHERE id = $1", False),
    ("INSERT INTO runs (id, status) VALUES ($1, 'done')", False),
])
def test_sql(sql, expected):
    assert WRITES.is_terminal(_call(["db"], "ExecContext", [_ref("ctx"), {"k": "str", "v": sql}])) is expected
