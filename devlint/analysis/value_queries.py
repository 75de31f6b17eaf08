"""Small questions about values and nodes that calls and handlers both ask."""
from __future__ import annotations

from typing import Optional

import libcst as cst

from . import torch_api as api
from .facts import Operand
from .lattice import ANY, BATCH, CPU, HOST, LIST, MODULE, TENSOR, TUPLE, Value


def placed(value: Value) -> bool:
    """A tensor-like value whose device is known."""
    return value.device.known and value.kind in (TENSOR, BATCH, ANY)


def is_move_call(node) -> bool:
    """Is `node` a `.to(...)`/`.cuda()` call: did a value get its device there (rather than being built there)?"""
    return (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
            and node.func.attr.value in api.MOVE_METHODS)


def replaced_part(module: Value) -> Optional[Operand]:
    """The part a module left on the CPU (`model.fc = nn.Linear(...)` after its move), as an operand."""
    statement = module.stray
    if not isinstance(statement, cst.Assign) or module.kind != MODULE or module.device.is_cpu:
        return None  # (a CPU module with a stray is the part itself, not the model it was put in)
    return Operand(statement.targets[0].target, Value(kind=MODULE, device=CPU, origin=statement.value, stateful=True))


def host_data(value: Value, depth: int = 0) -> bool:
    """Numbers or arrays on the host: a numpy array, or a Python list or tuple of host values
    (nested ones too: `[[0.1, 0.2], [0.3, 0.4]]`, a kernel written out)."""
    if value.kind in (LIST, TUPLE) and value.items:
        return depth < 4 and all(host_data(item, depth + 1) for item in value.items)
    return value.kind == HOST
