"""Running the checks, some of them in a forked copy of the process (SPEC §8: `--jobs`).

Checks are pure queries over the finished graph, so a fork started once the graph is
built can run some of them while this process runs the others; only their findings come
back. The checks that share the knob index with the JSON inventory (DA501, DA502) stay
here, so the inventory reuses it. Where fork is not the platform's start method, for small
graphs, and with one job, everything runs here, in order; results never depend on it.
"""

from __future__ import annotations

import multiprocessing
import sys
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from deadline_audit import checks

Outcome = tuple[list, str | None]  # (findings, internal error message or None)

STAY_HERE = frozenset({"DA501", "DA502"})  # their knob index serves the inventory afterwards
MIN_LINES = 20_000  # below this a fork costs more than the checks it would take over

_forked: tuple[Any, Any] | None = None  # (graph, config), inherited by the fork


def run_split(graph: Any, config: Any, rules: list[str], *, jobs: int, lines: int) -> dict[str, Outcome]:
    """rule id -> its outcome, in the order of `rules`."""
    global _forked
    away = [r for r in rules if r not in STAY_HERE] if _can_fork(jobs, lines) else []
    if len([r for r in rules if r not in away]) == 0:
        away = []  # nothing would be left to overlap with
    outcomes: dict[str, Outcome] = {}
    pool = future = None
    if away:
        _forked = (graph, config)
        try:
            pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("fork"))
            future = pool.submit(_run_forked, tuple(away))
        except (OSError, ValueError):
            pool = future = None
            away = []
    try:
        for rule_id in rules:
            if rule_id not in away:
                outcomes[rule_id] = run_one(rule_id, graph, config)
        if future is not None:
            try:
                outcomes.update(future.result())
            except Exception:  # noqa: BLE001 - the fork died: its share runs here instead
                for rule_id in away:
                    outcomes[rule_id] = run_one(rule_id, graph, config)
    finally:
        _forked = None
        if pool is not None:
            pool.shutdown(wait=True)
    return {rule_id: outcomes[rule_id] for rule_id in rules}


def run_one(rule_id: str, graph: Any, config: Any) -> Outcome:
    check = checks.get_check(rule_id)
    try:
        return list(check(graph, dict(config.rule_options.get(rule_id, {})))), None
    except Exception as exc:  # noqa: BLE001 - reported as an internal error, the run goes on
        return [], f"internal error in the {rule_id} check: {type(exc).__name__}: {exc}"


def _run_forked(rules: tuple[str, ...]) -> dict[str, Outcome]:
    assert _forked is not None, "check_split: the fork did not inherit the graph"
    graph, config = _forked
    return {rule_id: run_one(rule_id, graph, config) for rule_id in rules}


def _can_fork(jobs: int, lines: int) -> bool:
    return jobs > 1 and lines >= MIN_LINES and sys.platform == "linux" \
        and "fork" in multiprocessing.get_all_start_methods()
