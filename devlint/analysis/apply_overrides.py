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

_APPLY = "_apply"


class _AssignedInApply(cst.CSTVisitor):
    def __init__(self) -> None:
        self.depth = 0
        self.names: Set[str] = set()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if node.name.value == _APPLY:
            self.depth += 1

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        if original_node.name.value == _APPLY:
            self.depth -= 1

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        if self.depth and isinstance(node.target, cst.Attribute):
            self.names.add(node.target.attr.value)


def attributes_applied(module: cst.Module, source: str) -> FrozenSet[str]:
    """Names of attributes some `_apply` override of this file assigns (`m.stride = fn(m.stride)`)."""
    if _APPLY not in source:  # (most files: no walk)
        return frozenset()
    visitor = _AssignedInApply()
    module.visit(visitor)
    return frozenset(visitor.names)
