"""Attributes that a module's `_apply` override carries along.

`nn.Module.to()`, `.cuda()` and `.half()` all go through `Module._apply(fn)`.
A class that keeps a plain tensor attribute and overrides `_apply` to run
`fn` on it (`self.stride = fn(self.stride)`, or a model doing it for its
head: `m.stride = fn(m.stride)`) has moved that tensor by hand, so DEV105
must not report it. The fact is per attribute name, because the override
often lives in another class (or file) than the attribute.
"""
from __future__ import annotations

from typing import FrozenSet, Set

import libcst as cst

from .names import walk

_APPLY = "_apply"


def attributes_applied(module: cst.Module, source: str) -> FrozenSet[str]:
    """Names of attributes some `_apply` override of this file assigns (`m.stride = fn(m.stride)`)."""
    if _APPLY not in source:  # (most files: no walk)
        return frozenset()
    names: Set[str] = set()
    for function in walk(module):
        if isinstance(function, cst.FunctionDef) and function.name.value == _APPLY:
            names.update(node.target.attr.value for node in walk(function.body)
                         if isinstance(node, cst.AssignTarget) and isinstance(node.target, cst.Attribute))
    return frozenset(names)
