"""A shared leaf: keep Python's cyclic garbage collector waiting while large, acyclic
structures are built (parse trees, facts, the graph). The collector would rescan them again
and again while they grow and free nothing (LIBRARIES.md).

When the pause ends, what was built is moved to the collector's permanent generation
(`gc.freeze`) rather than handed back to it: re-enabled, the collector's next young
collection would otherwise walk every object made during the pause (0.3 s for a real Go
tree of 83k lines, 500k objects) and later full collections would walk them again, to
find almost nothing (138 objects on that tree). Frozen objects are still freed by
reference counting when they die; only cyclic garbage made during a pause is never
collected, which is that handful."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.freeze()
            gc.enable()
