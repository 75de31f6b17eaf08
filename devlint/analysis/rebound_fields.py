"""Fields that change after construction.

A test on a field (`if self.use_head:`) decides a branch by the field's literal only when nothing
can have changed the field since `__init__` set it: no other method, function or module-level
statement of the file assigns an attribute of that name, and nothing sets attributes by name
(`setattr`, `__dict__`). Otherwise a method analysed without its caller could see a value that
another method replaced, and the branch stays undecided.
"""
from __future__ import annotations

from dataclasses import replace
from typing import FrozenSet, Optional, Set

import libcst as cst

from .lattice import BATCH, DEVICE, TENSOR, UNKNOWN, UNKNOWN_VALUE, Value
from .names import child_nodes, walk

#: Every field may change: the file sets attributes by a computed name.
ANY_FIELD = frozenset({"*"})


def fields_rebound(module: cst.Module) -> FrozenSet[str]:
    """Names of attributes assigned anywhere but as `self.NAME = ...` in an `__init__`
    (ANY_FIELD when the file sets attributes by a computed name)."""
    names: Set[str] = set()
    stack = [(module, False)]
    while stack:
        node, in_init = stack.pop()
        if isinstance(node, cst.FunctionDef):
            in_init = node.name.value == "__init__"
        elif isinstance(node, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign)):
            for target in walk(node.target):
                if isinstance(target, cst.Attribute) and not (in_init and _on_self(target)):
                    names.add(target.attr.value)
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "setattr":
            return ANY_FIELD
        elif isinstance(node, cst.Attribute) and node.attr.value == "__dict__":
            return ANY_FIELD
        stack.extend((child, in_init) for child in child_nodes(node))
    return frozenset(names)


def _on_self(target: cst.Attribute) -> bool:
    return isinstance(target.value, cst.Name) and target.value.value == "self"


def may_be_rebound(field: Optional[str], rebound: FrozenSet[str]) -> bool:
    return field is None or "*" in rebound or field in rebound


def as_seen_unseeded(field: str, value: Value, rebound: FrozenSet[str]) -> Value:
    """A field `__init__` set, as a method read without its caller sees it: a device or a tensor
    another method rebinds (`set_device(device)`, `self.memory = self.memory.to(strategy.device)` in
    a plugin's `before_training`) may be the new one already, so where it is, is unknown."""
    if not may_be_rebound(field, rebound):
        return value
    if value.kind == DEVICE:
        return UNKNOWN_VALUE
    if value.kind in (TENSOR, BATCH) and value.device.known:
        return replace(value, device=UNKNOWN)
    return value

