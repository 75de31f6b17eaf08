"""Facts the interpreter records for rules to read.

Each fact is a plain record of something the analysis is sure about: a
device mismatch, a discarded move, a tensor handed to a host library, module
state that will not follow ``.to()``.  Rules turn facts into diagnostics;
they never look at the tree themselves.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List

import libcst as cst

from .lattice import Value

# Contexts of a device mismatch.
MODEL_CALL = "model-call"   # a module with parameters called with an input elsewhere
OPERATION = "operation"     # operands of one op on different devices


@dataclass(frozen=True)
class Operand:
    node: cst.CSTNode       # the expression as written
    value: Value


@dataclass(frozen=True)
class DeviceMismatch:
    node: cst.CSTNode       # the call or operator that fails
    context: str            # MODEL_CALL or OPERATION
    anchor: Operand         # the module, or the operand already on the device
    offender: Operand       # the value on the wrong device
    operation: str          # what fails, for messages: "model call", "torch.cat", "+"


@dataclass(frozen=True)
class DiscardedMove:
    node: cst.CSTNode       # the call whose result is thrown away
    receiver: Operand
    method: str             # "to", "cuda", ...


@dataclass(frozen=True)
class HostConversion:
    node: cst.CSTNode       # `.numpy()` call or the host library call
    tensor: Operand
    api: str                # "numpy()", "numpy.array", ...


@dataclass(frozen=True)
class UnregisteredState:
    node: cst.CSTNode       # the assignment or the `.append(...)` call
    owner: str              # the nn.Module subclass
    attribute: str
    value: Value
    what: str               # "tensor", "list", "dict"
    container_origin: cst.CSTNode = None  # where a plain list/dict was created


@dataclass
class FileFacts:
    mismatches: List[DeviceMismatch] = field(default_factory=list)
    discarded_moves: List[DiscardedMove] = field(default_factory=list)
    host_conversions: List[HostConversion] = field(default_factory=list)
    unregistered_state: List[UnregisteredState] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.mismatches or self.discarded_moves or self.host_conversions or self.unregistered_state)
