"""What each function of a module contains, found in one walk of the module.

Several questions are asked of a function's text again and again while a file
is interpreted: which calls its body makes (to order the generic runs, to see
whether a method moves `self` or hands a parameter on), and whether it offers
a way to run without CUDA. Walking the function for each question costs a walk
per question per call site; nested functions would be walked once for every
function around them. One walk of the module answers them all, and stays
linear in the size of the file however deep the nesting.
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Dict, List, Tuple

import libcst as cst

from .names import child_nodes


@dataclasses.dataclass
class FunctionSyntax:
    #: every call in the body, nested functions' and lambdas' included (they may run), in the
    #: order `walk(body)` meets them
    calls: List[cst.Call] = dataclasses.field(default_factory=list)
    #: some node of the whole definition (header included: `device="cpu"`) offers a CPU path
    offers_cpu_path: bool = False


_Records = Tuple[FunctionSyntax, ...]


def index_functions(module: cst.Module, offers_cpu_path: Callable[[cst.CSTNode], bool] = None
                    ) -> Dict[int, FunctionSyntax]:
    """`id(function) -> FunctionSyntax` for every function of the module, and for every class (whose
    record says only whether it offers a CPU path). `offers_cpu_path` tests one node; without it (a
    file whose text names no CPU path) no node is tested."""
    found: Dict[int, FunctionSyntax] = {}
    # each entry: a node, the functions whose body holds it, the functions whose header does
    stack: List[Tuple[cst.CSTNode, _Records, _Records]] = [(module, (), ())]
    while stack:
        node, bodies, headers = stack.pop()
        kind = type(node)
        if kind is cst.Call:
            for record in bodies:
                record.calls.append(node)
        if offers_cpu_path is not None and (bodies or headers) and offers_cpu_path(node):
            for record in bodies + headers:
                record.offers_cpu_path = True
        if kind is cst.FunctionDef:
            record = found[id(node)] = FunctionSyntax()
            own = (record,)
            stack.extend((part, bodies + own, headers) if part is node.body else (part, bodies, headers + own)
                         for part in child_nodes(node))
            continue
        if kind is cst.ClassDef:
            # (a class is asked only whether it offers a CPU path: its calls are its methods')
            own = (found.setdefault(id(node), FunctionSyntax()),)
            stack.extend((part, bodies, headers + own) for part in child_nodes(node))
            continue
        stack.extend((child, bodies, headers) for child in child_nodes(node))
    return found
