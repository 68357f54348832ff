"""DA302 timeout-recorded-as-failed: a timeout on remote or asynchronous work mapped to a
certain-failure state.

A branch of a classifier (marker passes: an `except` clause, an `if`/`case` test, a table
entry) whose test names a timeout of the catalog (outcomes.toml `[timeouts]`; helpers
such as `isTimeout(err)` through their `timeout_test` summary), unless every timeout it
names proves the request was never sent (`[not_sent]`, local time limits). Reported at the
first outcome of the branch that records a failure: a failure state returned, assigned
or passed to a call, a failing terminal write (`runs.fail(id)`), or a call of a helper
whose body records one (`markFailed(job)`).
"""

from __future__ import annotations

from collections.abc import Iterable

from deadline_audit.checks.outcomes import Classifier, Outcomes, location
from deadline_audit.findings import Finding, Related
from deadline_audit.graph import TimeoutGraph

RULE_ID, RULE_NAME, SEVERITY = "DA302", "timeout-recorded-as-failed", "warning"


def check(graph: TimeoutGraph, options: dict) -> Iterable[Finding]:
    oc = Outcomes(graph)
    seen: set[tuple[str, int]] = set()
    for c in oc.classifiers():
        if c.marker.get("permit_wait"):
            continue  # a timed-out wait for a permit: nothing was sent
        for branch in c.branches:
            if branch.get("fallback"):
                continue
            timeouts = oc.timeout_names(branch, c.lang)
            if not timeouts:
                continue
            outcomes = branch.get("outcomes", ())
            for i, outcome in enumerate(outcomes):
                found = oc.failure_record(outcome, c.lang, path=c.path)
                if outcome.get("how") == "raise":
                    break
                if found is None:
                    if outcome.get("how") == "return" and not (
                            i + 1 < len(outcomes) and outcomes[i + 1].get("line") == outcome.get("line")):
                        break  # the branch ends here (unless the return has more results)
                    continue
                states = [s for b in c.branches for s in [oc.branch_state(b, c.lang, c.path)] if s]
                why, failed = found
                if not _in_scope(oc, c, states, why):
                    break
                key = (c.path, outcome["line"])
                if key not in seen:
                    seen.add(key)
                    yield _finding(oc, c, branch, outcome, timeouts, why, failed, states)
                break


def _in_scope(oc: Outcomes, c: Classifier, states, why: str) -> bool:
    if "()" in why:  # a failing terminal write names its unit of work
        return True
    return oc.in_scope(c, [s for s, _ in states])


def _finding(oc: Outcomes, c: Classifier, branch, outcome, timeouts, why: str, failed, states) -> Finding:
    fname = c.fn.sym.rsplit(".", 1)[-1]
    timeout = _short(timeouts[0])
    sibling = oc.uncertain_sibling(failed, c.lang) if failed is not None else None
    for s, _ in ([] if sibling else states):
        if s.kind == "failed":
            sibling = oc.uncertain_sibling(s, c.lang)
            if sibling:
                break
    if sibling is None:
        sibling = next((s.name for s, _ in states if s.kind == "uncertain"), None)
    instead = (f"record {sibling} instead" if sibling else
               "record an uncertain state instead (unknown / needs reconciliation)")
    message = (f"{fname} records a timeout ({timeout}) as a certain failure ({why}): a timeout says we stopped "
               f"listening, not that the work stopped — it may still be running and succeed later. "
               f"{instead[:1].upper()}{instead[1:]}, and keep failed for the errors that prove nothing was sent "
               f"(connect, pool or dial timeouts, a permit wait before the work started).")
    related = [Related(f"the timeout branch: {', '.join(branch.get('inputs', ())[:3]) or timeout}",
                       location(c.path, branch["line"], branch["col"]))]
    if failed is not None:
        for label, sym in ((f"{failed.name} is declared here", failed.sym),
                           (f"{sibling} is declared here", oc.sibling_sym(failed, c.lang))):
            where = oc.declared_at(sym)
            if where is not None:
                related.append(Related(label, where))
    fix = f"In the {timeout} branch, {instead}; let a reconciler find out what really happened."
    return Finding(RULE_ID, RULE_NAME, SEVERITY, message, location(c.path, outcome["line"], outcome["col"]),
                   related, [], fix)


def _short(name: str) -> str:
    name = name.strip()
    if name.startswith("()"):
        return f"{name[2:]}()"
    head, _, last = name.rpartition(".")
    return f"{head.rsplit('/', 1)[-1]}.{last}" if head else last
