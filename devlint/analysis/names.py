"""Small helpers over libcst expressions: dotted names and identifiers."""
from __future__ import annotations

from typing import Optional

import libcst as cst


def dotted_name(node: cst.BaseExpression) -> Optional[str]:
    """`a.b.c` for a chain of names and attributes, else None."""
    parts = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if isinstance(node, cst.Name):
        parts.append(node.value)
        return ".".join(reversed(parts))
    return None


def last_identifier(node: cst.BaseExpression) -> str:
    """The rightmost identifier of an expression: `self.train_loader` -> `train_loader`."""
    while True:
        if isinstance(node, cst.Name):
            return node.value
        if isinstance(node, cst.Attribute):
            return node.attr.value
        if isinstance(node, cst.Call):
            node = node.func
            continue
        if isinstance(node, cst.Subscript):
            node = node.value
            continue
        return ""


def string_value(node: cst.BaseExpression) -> Optional[str]:
    """The value of a plain string literal, else None."""
    if isinstance(node, cst.SimpleString):
        try:
            value = node.evaluated_value
        except Exception:  # noqa: BLE001 - odd literals are simply not strings we know
            return None
        return value if isinstance(value, str) else None
    if isinstance(node, cst.ConcatenatedString):
        try:
            value = node.evaluated_value
        except Exception:  # noqa: BLE001
            return None
        return value if isinstance(value, str) else None
    return None


def integer_value(node: cst.BaseExpression) -> Optional[int]:
    if isinstance(node, cst.Integer):
        try:
            return int(node.value.replace("_", ""), 0)
        except ValueError:
            return None
    return None


def keyword(call: cst.Call, name: str) -> Optional[cst.Arg]:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    return None


def positional(call: cst.Call, index: int) -> Optional[cst.Arg]:
    position = 0
    for arg in call.args:
        if arg.keyword is None and not arg.star:
            if position == index:
                return arg
            position += 1
    return None
