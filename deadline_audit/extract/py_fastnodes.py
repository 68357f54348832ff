"""libcst nodes built without the dataclass machinery while a file is parsed.

libcst's native parser builds every node by calling its frozen dataclass: the generated
`__init__` sets each field through `object.__setattr__` and then runs `__post_init__`,
whose `_validate` guards hand-built nodes (libcst's own PERF note says the parser's trees
are valid by construction). Over the files of a real tree that is about a tenth of the
parse (1.4M nodes for openai-python's 133k parsed lines). During the parse each node class
gets an `__init__` with the same signature that stores the fields straight through their
slots and skips the validation; the originals are back as soon as the parse returns, so
nodes built anywhere else are untouched. A class this cannot mirror keeps its own
`__init__` with validation turned off.
"""

from __future__ import annotations

import dataclasses
import types
from contextlib import contextmanager
from functools import cache
from typing import Any, Callable, Iterator

import libcst as cst

_UNSET = object()  # a default_factory field the caller did not pass


@contextmanager
def plain_node_construction() -> Iterator[None]:
    swaps = _swaps()
    original_post_init = cst.CSTNode.__dict__.get("__post_init__")
    for cls, (_, plain) in swaps.items():
        cls.__init__ = plain
    if original_post_init is not None:  # for the classes left with their own __init__
        cst.CSTNode.__post_init__ = _no_validation
    try:
        yield
    finally:
        for cls, (own, _) in swaps.items():
            cls.__init__ = own
        if original_post_init is not None:
            cst.CSTNode.__post_init__ = original_post_init


def _no_validation(self: Any) -> None:
    return None


@cache
def _swaps() -> dict[type, tuple[Callable[..., None], Callable[..., None]]]:
    """Each node class with its own dataclass `__init__`: (that __init__, the plain one)."""
    swaps = {}
    for cls in _node_classes():
        own = cls.__dict__.get("__init__")
        if own is None or not dataclasses.is_dataclass(cls):
            continue
        plain = _plain_init(cls)
        if plain is not None:
            swaps[cls] = (own, plain)
    return swaps


def _node_classes() -> list[type]:
    seen: list[type] = []
    stack = [cst.CSTNode]
    while stack:
        for sub in stack.pop().__subclasses__():
            if sub not in seen:
                seen.append(sub)
                stack.append(sub)
    return seen


def _plain_init(cls: type) -> Callable[..., None] | None:
    """An `__init__` with the dataclass's signature that only stores the fields."""
    params: list[str] = []
    kw_only: list[str] = []
    body: list[str] = []
    env: dict[str, Any] = {"_UNSET": _UNSET}
    for f in dataclasses.fields(cls):
        if not f.init:
            return None  # computed fields: leave the class as libcst wrote it
        slot = _slot(cls, f.name)
        if slot is None:
            return None
        env[f"_set_{f.name}"] = slot.__set__
        value = f.name
        if f.default is not dataclasses.MISSING:
            env[f"_default_{f.name}"] = f.default
            param = f"{f.name}=_default_{f.name}"
        elif f.default_factory is not dataclasses.MISSING:
            env[f"_factory_{f.name}"] = f.default_factory
            param = f"{f.name}=_UNSET"
            value = f"_factory_{f.name}() if {f.name} is _UNSET else {f.name}"
        else:
            param = f.name
        (kw_only if f.kw_only else params).append(param)
        body.append(f"    _set_{f.name}(self, {value})")
    signature = ", ".join(["self", *params, *(["*", *kw_only] if kw_only else [])])
    source = f"def __init__({signature}):\n" + ("\n".join(body) or "    pass") + "\n"
    try:
        exec(source, env)  # noqa: S102 - built from the class's own field names only
    except SyntaxError:  # a signature Python refuses (a required field after a default)
        return None
    init = env["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


def _slot(cls: type, name: str) -> types.MemberDescriptorType | None:
    for klass in cls.__mro__:
        found = klass.__dict__.get(name)
        if isinstance(found, types.MemberDescriptorType):
            return found
    return None
