"""Fields that change after construction.

A test on a field (`if self.use_head:`) decides a branch by the field's literal only when nothing
can have changed the field since `__init__` set it: no other method, function or module-level
statement of the file assigns an attribute of that name, and nothing sets attributes by name
(`setattr`, `__dict__`). Otherwise a method analysed without its caller could see a value that
another method replaced, and the branch stays undecided.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import FrozenSet, Optional, Set

import libcst as cst

from . import torch_api as api
from .lattice import BATCH, DEVICE, TENSOR, UNKNOWN, UNKNOWN_VALUE, Value
from .names import statements_in, walk

#: Every field may change: the file sets attributes by a computed name.
ANY_FIELD = frozenset({"*"})


@dataclass(frozen=True)
class FieldWrites:
    """What the statements of a file assign to attributes, from one walk."""
    #: names assigned anywhere but as `self.NAME = ...` in an `__init__` (ANY_FIELD when the file
    #: sets attributes by a computed name)
    rebound: FrozenSet[str]
    #: names some statement sets to a moved value (`self.pe = self.pe.to(x.device)`): a field the
    #: object itself moves where it is used, once
    moved: FrozenSet[str]


def field_writes(module: cst.Module, source: str) -> FieldWrites:
    # (`setattr` in a comment or a string too: then every field is taken as changing)
    by_name = bool(_BY_NAME.search(source))
    rebound: Set[str] = set()
    moved: Set[str] = set()
    for small, function in statements_in(module):
        if isinstance(small, cst.Assign):
            targets = [target.target for target in small.targets]
        elif isinstance(small, (cst.AugAssign, cst.AnnAssign)):
            targets = [small.target]
        else:
            continue
        in_init = function is not None and function.name.value == "__init__"
        for target in targets:
            for node in walk(target):
                if isinstance(node, cst.Attribute) and not (in_init and _on_self(node)):
                    rebound.add(node.attr.value)
        if not isinstance(small, cst.AugAssign) and small.value is not None and _is_moved(small.value):
            moved.update(target.attr.value for target in targets if isinstance(target, cst.Attribute))
    return FieldWrites(ANY_FIELD if by_name else frozenset(rebound), frozenset(moved))


def _is_moved(value: cst.BaseExpression) -> bool:
    """Does the expression move something to a device (`.to(...)`, `.cuda()`; not `.cpu()`)?"""
    return any(isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
               and node.func.attr.value in api.MOVE_METHODS and node.func.attr.value != "cpu"
               for node in walk(value))


#: `setattr(obj, name, v)`, `obj.__dict__`: attributes set by a name computed at run time
_BY_NAME = re.compile(r"\bsetattr\s*\(|\.__dict__\b")


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

