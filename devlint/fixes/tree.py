"""Cheap structural questions about a tree, for fixes: the path from the module down to a
node, and where a name is bound in one scope.

libcst's ParentNodeProvider and ScopeProvider rebuild every node of the module (several
seconds on a large file); a fix asks about one node, so these walks read fields only, and
the path search descends only into children whose position contains the node.
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Iterator, List, Optional

import libcst as cst
from libcst.metadata import CodeRange

RangeOf = Callable[[cst.CSTNode], Optional[CodeRange]]
#: Nodes whose bodies are scopes of their own: bindings inside do not bind outside.
NEW_SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)


def children(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    for field in dataclasses.fields(node):
        value = getattr(node, field.name)
        if isinstance(value, cst.CSTNode):
            yield value
        elif isinstance(value, (tuple, list)):
            for item in value:
                if isinstance(item, cst.CSTNode):
                    yield item


def _contains(outer: Optional[CodeRange], inner: CodeRange) -> bool:
    if outer is None:
        return True  # no position (whitespace and the like): look inside anyway
    return ((outer.start.line, outer.start.column) <= (inner.start.line, inner.start.column)
            and (inner.end.line, inner.end.column) <= (outer.end.line, outer.end.column))


def path_to(root: cst.CSTNode, target: cst.CSTNode, range_of: RangeOf) -> Optional[List[cst.CSTNode]]:
    """[root, ..., target], or None when `target` is not in the tree."""
    where = range_of(target)
    if where is None:
        return None
    stack = [(root, [root])]
    while stack:
        node, path = stack.pop()
        if node is target:
            return path
        for child in children(node):
            if _contains(range_of(child), where):
                stack.append((child, path + [child]))
    return None


def binding_positions(name: str, scope: cst.CSTNode, range_of: RangeOf) -> List[CodeRange]:
    """Where `name` is bound directly in `scope` (a module or a function, parameters included)."""
    found: List[CodeRange] = []
    if isinstance(scope, cst.FunctionDef):
        for param in _parameters(scope.params):
            if param.name.value == name:
                found.append(range_of(param.name))
        body = [scope.body]
    else:
        body = list(children(scope))
    stack = list(body)
    while stack:
        node = stack.pop()
        for bound in _bound_names(node):
            if bound.value == name:
                found.append(range_of(bound))
        if isinstance(node, NEW_SCOPES):
            continue  # its name is bound here (above); its body is another scope
        stack.extend(children(node))
    return [where for where in found if where is not None]


def _parameters(params: cst.Parameters) -> Iterator[cst.Param]:
    yield from params.posonly_params
    yield from params.params
    yield from params.kwonly_params
    for extra in (params.star_arg, params.star_kwarg):
        if isinstance(extra, cst.Param):
            yield extra


def _bound_names(node: cst.CSTNode) -> Iterator[cst.Name]:
    """The names a statement or expression node binds by itself."""
    if isinstance(node, cst.AssignTarget):
        yield from _target_names(node.target)
    elif isinstance(node, (cst.AnnAssign, cst.AugAssign)):
        yield from _target_names(node.target)
    elif isinstance(node, cst.For):
        yield from _target_names(node.target)
    elif isinstance(node, cst.WithItem) and node.asname is not None:
        yield from _target_names(node.asname.name)
    elif isinstance(node, cst.ExceptHandler) and node.name is not None:
        yield from _target_names(node.name.name)
    elif isinstance(node, cst.NamedExpr):
        yield from _target_names(node.target)
    elif isinstance(node, (cst.FunctionDef, cst.ClassDef)):
        yield node.name
    elif isinstance(node, (cst.Global, cst.Nonlocal)):
        yield from (item.name for item in node.names)
    elif isinstance(node, (cst.Import, cst.ImportFrom)) and not isinstance(node.names, cst.ImportStar):
        for alias in node.names:
            if alias.asname is not None:
                yield from _target_names(alias.asname.name)
            elif isinstance(alias.name, cst.Name):
                yield alias.name
            else:  # `import a.b` binds `a`
                root = alias.name
                while isinstance(root, cst.Attribute):
                    root = root.value
                if isinstance(root, cst.Name):
                    yield root


def _target_names(target: cst.CSTNode) -> Iterator[cst.Name]:
    if isinstance(target, cst.Name):
        yield target
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from _target_names(element.value)
    elif isinstance(target, cst.StarredElement):
        yield from _target_names(target.value)
