"""Registering decorators: `@register_model("mlp") class MLP(nn.Module)` stores the class in a dict.

fairseq, timm, mmdet and most research code build models by name from a registry a decorator
fills (`MODEL_REGISTRY[name] = cls`), then call `MODEL_REGISTRY[cfg.arch](...)`. A decorator does
that when the function it runs (the function itself, or the inner function a decorator factory
returns) stores its first parameter under a key of a dict it does not bind itself. This module
reads that shape from the decorator's source; the interpreter then adds the class to the dict, as
the decorator would when the class statement runs.
"""
from __future__ import annotations

from typing import Iterator, List, Optional, Set, Tuple

import libcst as cst

from .names import statements_in


def stores_of(function: cst.FunctionDef, called: bool) -> List[cst.Name]:
    """The dicts (the names in `NAME[key] = arg`) a decorator spelled `@function` (or, when
    `called`, `@function(...)`) stores the decorated object in."""
    storer = _returned_inner(function) if called else function
    if storer is None:
        return []
    params = storer.params.params
    if not params:
        return []
    given = params[0].name.value
    local = _bound_names(storer)
    return [target.value for target, value in _subscript_stores(storer)
            if isinstance(value, cst.Name) and value.value == given
            and isinstance(target.value, cst.Name) and target.value.value not in local]


def _returned_inner(factory: cst.FunctionDef) -> Optional[cst.FunctionDef]:
    """`def register(name): def deco(cls): ...; return deco`: the inner function it returns."""
    inner = {s.name.value: s for s in factory.body.body if isinstance(s, cst.FunctionDef)}
    for line in factory.body.body:
        if isinstance(line, cst.SimpleStatementLine):
            for small in line.body:
                if isinstance(small, cst.Return) and isinstance(small.value, cst.Name) and small.value.value in inner:
                    return inner[small.value.value]
    return None


def _subscript_stores(function: cst.FunctionDef) -> Iterator[Tuple[cst.Subscript, cst.BaseExpression]]:
    """(`NAME[key]` target, assigned value) of the plain assignments in the function's own body."""
    for small, _ in statements_in(function, enter_definitions=False):
        if isinstance(small, cst.Assign):
            for target in small.targets:
                if isinstance(target.target, cst.Subscript):
                    yield target.target, small.value


def _bound_names(function: cst.FunctionDef) -> Set[str]:
    """Parameters and names the function assigns: a dict of its own is no registry."""
    names = {p.name.value for p in function.params.params + function.params.kwonly_params}
    for small, _ in statements_in(function, enter_definitions=False):
        if isinstance(small, cst.Assign):
            names.update(t.target.value for t in small.targets if isinstance(t.target, cst.Name))
    return names
