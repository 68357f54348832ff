"""DA301 failed-by-default: a classifier of the outcome of remote or asynchronous work
whose fallback branch yields a certain-failure state.

A classifier (marker passes: `classifier`) maps two or more distinct codes, errors or
exception types to two or more distinct states; states are resolved to their
declarations and named failed / uncertain by the catalog (checks/outcomes.py). Reported
at the fallback branch: `default:` / `case _:`, the final `else` (its statement), the
`.get` default, the return after a loop over a table, `except Exception:`.
"""

from __future__ import annotations

from collections.abc import Iterable

from deadline_audit.checks.outcomes import Classifier, Outcomes, State, location
from deadline_audit.findings import Finding, Related
from deadline_audit.graph import TimeoutGraph

RULE_ID, RULE_NAME, SEVERITY = "DA301", "failed-by-default", "warning"

_FORMS = ("if", "match", "switch", "get", "table", "except", "map", "enum")


def check(graph: TimeoutGraph, options: dict) -> Iterable[Finding]:
    oc = Outcomes(graph)
    seen: set[tuple[str, int]] = set()
    for c in oc.classifiers():
        if c.marker.get("form") not in _FORMS:
            continue
        found = _fallback_failure(oc, c)
        if found is None:
            continue
        state, line, col, listed, states = found
        key = (c.path, line)
        if key in seen:
            continue
        seen.add(key)
        yield _finding(oc, c, state, line, col, listed, states)


def _fallback_failure(oc: Outcomes, c: Classifier):
    listed = [b for b in c.branches if not b.get("fallback")]
    fallbacks = [b for b in c.branches if b.get("fallback")]
    if not fallbacks or len(listed) < 2:
        return None
    inputs = {i for b in listed for i in b.get("inputs", ())}
    if len(inputs) < 2:
        return None
    fb = oc.branch_state(fallbacks[-1], c.lang, c.path)
    if fb is None or fb[0].kind != "failed":
        return None
    states: list[tuple[State, dict]] = [s for b in listed for s in [oc.branch_state(b, c.lang, c.path)] if s]
    distinct = {s.key for s, _ in states} | {fb[0].key}
    if len(states) < 2 or len(distinct) < 2:
        return None
    if all(s.kind == "failed" or oc.names_failure(s.name) for s, _ in states):
        # kinds of error (`"invalid_request_error"`, …) or causes of a failure
        # (`GetTaskFailedCauseTimeout`, `TimeoutError`): why it failed, not whether
        return None
    if not oc.in_scope(c, [s for s, _ in states] + [fb[0]]):
        return None
    branch = fallbacks[-1]
    form = c.marker.get("form")
    if form in ("if",):  # no position for `else`: its statement
        line, col = fb[1]["line"], fb[1]["col"]
    else:
        line, col = branch["line"], branch["col"]
    return fb[0], line, col, listed, states


def _finding(oc: Outcomes, c: Classifier, state: State, line: int, col: int, listed, states) -> Finding:
    fname = c.fn.sym.rsplit(".", 1)[-1]
    if c.marker.get("owner"):
        fname = f"{c.marker['owner']}.{fname}"
    sibling = oc.uncertain_sibling(state, c.lang) or next(
        (s.name for s, _ in states if s.kind == "uncertain"), None)
    form = c.marker.get("form")
    what = {"get": "the default of the lookup", "table": "the return after the table",
            "enum": "the member every undeclared value becomes",
            "except": "the catch-all handler", "if": "the final branch"}.get(form, "the fallback branch")
    n = len({i for b in listed for i in b.get("inputs", ())})
    instead = (f"default to {sibling} (already declared)" if sibling else
               "default to an uncertain state (unknown / needs reconciliation; declare one)")
    message = (f"{fname} classifies the outcome of remote or asynchronous work ({n} listed codes), "
               f"but {what} records {state.name}, a certain failure: any code it does not list — "
               f"including codes added later — says the work did not happen, although it may still be running. "
               f"List the codes that prove the work never started and {instead}.")
    related = [Related(f"classifier {fname} (listed: {', '.join(sorted({s.name for s, _ in states}))})",
                       location(c.path, c.marker["line"], c.marker["col"]))]
    for label, sym in ((f"{state.name} is declared here", state.sym),
                       (f"{sibling} is declared here", oc.sibling_sym(state, c.lang))):
        where = oc.declared_at(sym)
        if where is not None:
            related.append(Related(label, where))
    fix = (f"Keep {state.name} for the codes that prove nothing ran; make the fallback "
           f"{sibling or 'an uncertain state'} and let a reconciler find out what happened.")
    return Finding(RULE_ID, RULE_NAME, SEVERITY, message, location(c.path, line, col), related, [], fix)
