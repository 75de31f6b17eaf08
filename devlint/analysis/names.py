"""Small helpers over libcst expressions: dotted names and identifiers."""
from __future__ import annotations

import dataclasses
from typing import Dict, Iterator, List, Optional, Tuple

import libcst as cst

#: Fields that hold only whitespace, comments and punctuation: no walk needs to enter them.
_LAYOUT_FIELDS = frozenset({
    "lpar", "rpar", "comma", "semicolon", "dot", "colon", "equal", "leading_lines", "lines_after_decorators",
    "header", "footer", "newline", "trailing_whitespace", "first_line", "empty_lines", "default_comma",
    "default_comma_after", "star_tok", "lbracket", "rbracket", "lbrace", "rbrace", "operator",
})
_CHILD_FIELDS: Dict[type, Tuple[str, ...]] = {}


def _child_fields(node_type: type) -> Tuple[str, ...]:
    names = _CHILD_FIELDS.get(node_type)
    if names is None:
        names = tuple(f.name for f in dataclasses.fields(node_type)
                      if f.name not in _LAYOUT_FIELDS and not f.name.startswith("whitespace"))
        _CHILD_FIELDS[node_type] = names
    return names


_IS_NODE: Dict[type, bool] = {}


def _is_node(value: object) -> bool:
    # (`isinstance` against libcst's abstract base classes is slow; a type's answer never changes)
    kind = type(value)
    known = _IS_NODE.get(kind)
    if known is None:
        known = _IS_NODE[kind] = issubclass(kind, cst.CSTNode)
    return known


def child_nodes(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The node's syntactic children, layout left out: much cheaper than libcst's `children`,
    which builds them through a visitor."""
    for name in _child_fields(type(node)):
        value = getattr(node, name)
        if type(value) in (list, tuple):
            for item in value:
                if _is_node(item):
                    yield item
        elif _is_node(value):
            yield value


def walk(node: cst.CSTNode, into=lambda node: True) -> Iterator[cst.CSTNode]:
    """Every node under `node` (itself first), not entering those `into` refuses."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        if current is node or into(current):
            stack.extend(child_nodes(current))


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
        text = node.value
        if text[0] in "\"'" and "\\" not in text:  # (most literals: no escapes, no prefix, no parse)
            quote = text[:3] if text[:3] in ('"""', "'''") else text[0]
            return text[len(quote):-len(quote)]
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


def sub_expressions(node: cst.CSTNode):
    """Every expression inside `node`, itself included. Cheaper than libcst's `children`
    for the shapes tests and loop headers usually have."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        if isinstance(current, (cst.Name, cst.SimpleString, cst.Integer, cst.Float)):
            continue
        if isinstance(current, cst.Attribute):
            stack.append(current.value)
        elif isinstance(current, cst.Call):
            stack.append(current.func)
            stack.extend(arg.value for arg in current.args)
        elif isinstance(current, (cst.BinaryOperation, cst.BooleanOperation)):
            stack.extend((current.left, current.right))
        elif isinstance(current, cst.Comparison):
            stack.append(current.left)
            stack.extend(target.comparator for target in current.comparisons)
        elif isinstance(current, cst.UnaryOperation):
            stack.append(current.expression)
        elif isinstance(current, cst.Subscript):
            stack.append(current.value)
        else:
            stack.extend(child for child in child_nodes(current) if isinstance(child, cst.BaseExpression)
                         or isinstance(child, (cst.Arg, cst.Element, cst.FormattedStringExpression)))


def isinstance_types(kinds: cst.BaseExpression) -> List[Optional[str]]:
    """The dotted names of the types `isinstance(x, kinds)` tests (`T` or `(A, B)`), None for any
    that is no plain name; `[None]` for an empty tuple, which proves nothing."""
    elements = [e.value for e in kinds.elements] if isinstance(kinds, cst.Tuple) else [kinds]
    return [dotted_name(element) for element in elements] or [None]


def root_name(expression: cst.BaseExpression, through_attributes: bool = False) -> Optional[str]:
    """`idx` for `idx`, `idx[:, -n:]`, `idx.long()` (and, `through_attributes`, `batch.images`): the
    name a value is read from."""
    while True:
        if isinstance(expression, cst.Name):
            return expression.value
        if isinstance(expression, cst.Subscript):
            expression = expression.value
        elif isinstance(expression, cst.Call) and isinstance(expression.func, cst.Attribute) and not expression.args:
            expression = expression.func.value
        elif through_attributes and isinstance(expression, cst.Attribute):
            expression = expression.value
        else:
            return None


def statements_in(owner: cst.CSTNode, enter_definitions: bool = True
                  ) -> Iterator[Tuple[cst.CSTNode, Optional[cst.FunctionDef]]]:
    """Every statement in the blocks of `owner` (a module, function, loop...), with the function it
    is in (None outside any): small statements (`Assign`, `Expr`...) and compound ones, nested
    blocks included, and nested functions and classes too unless `enter_definitions` is False.
    Assignments are statements, so this finds them without walking any expression."""
    pending: List[Tuple[cst.CSTNode, Optional[cst.FunctionDef]]] = [
        (statement, owner if isinstance(owner, cst.FunctionDef) else None) for statement in _blocks_of(owner)]
    while pending:
        node, function = pending.pop()
        if isinstance(node, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            for small in node.body:
                yield small, function
            continue
        yield node, function
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            if not enter_definitions:
                continue
            if isinstance(node, cst.FunctionDef):
                function = node
        if isinstance(node, cst.BaseCompoundStatement):
            pending.extend((statement, function) for statement in _blocks_of(node))


def _blocks_of(owner: cst.CSTNode) -> List[cst.CSTNode]:
    """The statements of a node's blocks (`else`, `except`, `finally`, `case` too)."""
    if isinstance(owner, cst.Module):
        return list(owner.body)
    blocks = [getattr(owner, "body", None)] + [getattr(owner, name, None) for name in ("orelse", "finalbody")]
    blocks += list(getattr(owner, "handlers", ())) + list(getattr(owner, "cases", ()))
    found: List[cst.CSTNode] = []
    for block in blocks:
        while block is not None and not isinstance(block, cst.BaseSuite):
            if isinstance(block, cst.If):  # `elif`: an If in the orelse
                found.append(block)
                block = None
            else:
                block = getattr(block, "body", None)
        if isinstance(block, cst.IndentedBlock):
            found.extend(block.body)
        elif isinstance(block, cst.SimpleStatementSuite):
            found.append(block)
    return found
