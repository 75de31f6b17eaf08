"""How this file spells `torch` and `torch.nn`, and the import to add when it does not.

Only top-level imports count: an import inside a function or an `if` may not
have run where the fix puts its code.
"""
from __future__ import annotations

from typing import Dict, Tuple

import libcst as cst

from ..analysis.names import dotted_name


def top_level_bindings(module: cst.Module) -> Dict[str, str]:
    """Qualified module name -> the local name bound to it at the top of the file."""
    bound: Dict[str, str] = {}
    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, cst.Import):
                for alias in small.names:
                    name = dotted_name(alias.name) or ""
                    if alias.asname is not None:
                        bound.setdefault(name, alias.asname.name.value)
                    else:  # `import torch.nn` binds `torch`
                        bound.setdefault(name.split(".")[0], name.split(".")[0])
                        bound.setdefault(name, name)
            elif isinstance(small, cst.ImportFrom) and small.module is not None and not small.relative:
                if isinstance(small.names, cst.ImportStar):
                    continue
                package = dotted_name(small.module) or ""
                for alias in small.names:
                    name = dotted_name(alias.name) or ""
                    local = alias.asname.name.value if alias.asname is not None else name
                    bound.setdefault(f"{package}.{name}", local)
    return bound


def spell(module: cst.Module, qualified: str) -> Tuple[str, bool]:
    """How to write `qualified` ("torch", "torch.nn") here, and whether `import torch` must be added."""
    bound = top_level_bindings(module)
    if qualified in bound:
        return bound[qualified], False
    if qualified.startswith("torch.") and "torch" in bound:
        return bound["torch"] + qualified[len("torch"):], False
    return qualified, True


def import_position(module: cst.Module) -> Tuple[int, bool]:
    """Index of the top-level statement before which `import torch` goes, and whether it goes
    after the last statement (a file of only a docstring and `__future__` imports)."""
    body = module.body
    index = 0
    if body and _is_docstring(body[0]):
        index = 1
    while index < len(body) and _is_future_import(body[index]):
        index += 1
    for position in range(index, len(body)):
        if is_import(body[position]):
            return position, False
    return index, index >= len(body)


def _is_docstring(statement: cst.CSTNode) -> bool:
    return (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1
            and isinstance(statement.body[0], cst.Expr)
            and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString)))


def _is_future_import(statement: cst.CSTNode) -> bool:
    return (isinstance(statement, cst.SimpleStatementLine)
            and any(isinstance(s, cst.ImportFrom) and dotted_name(s.module) == "__future__"
                    for s in statement.body if isinstance(s, cst.ImportFrom) and s.module is not None))


def is_import(statement: cst.CSTNode) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and any(
        isinstance(s, (cst.Import, cst.ImportFrom)) for s in statement.body)

