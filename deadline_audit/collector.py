"""A shared leaf: keep Python's cyclic garbage collector waiting while large, acyclic
structures are built (parse trees, facts, the graph). The collector would rescan them again
and again while they grow and free nothing (LIBRARIES.md); it runs once they are done."""

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
            gc.enable()
