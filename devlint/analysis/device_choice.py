"""Which accelerator a placement asks for, and whether anything made it optional.

Mixed into `Interpreter`.  Every placement (a move, a factory's `device=`, a
module built on a device) reports here with the device it resolved to; this
module records the evidence the parallel and portability rules read: the
root of an accelerator asked for with no fallback, placements on plain
``"cuda"`` in distributed code, and the first point where CUDA is initialised.
"""
from __future__ import annotations

from typing import Optional

import libcst as cst

from . import torch_api as api
from .facts import UnguardedAccelerator, VisibleDevicesTooLate
from .lattice import ANY, CUDA, DEVICE, SELECTED, SYMBOLIC, UNGUARDED, Device, Value
from .names import dotted_name, string_value
from .project import PROJECT_SOURCE

#: The key of a CUDA device whose index is computed (`f"cuda:{local_rank}"`): each process picks its own.
PER_RANK = "per-rank"


class DeviceChoiceTracker:
    """Evidence about device choices, per interpreted scope."""

    cuda_initialised: Optional[cst.CSTNode]
    chosen_device: str

    def note_placement(self, device: Device, device_value: Optional[Value], use: cst.CSTNode, env,
                       bare_cuda: bool = False) -> None:
        """Something is placed on `device`; `device_value` is the value that named it, if any."""
        if device.kind == SYMBOLIC or device.kind == SELECTED:
            self.chosen_device = self.chosen_device or (device.key or "device")
        if not device.is_accelerator:
            return
        if self.cuda_initialised is None and device.kind in (CUDA, UNGUARDED, SELECTED):
            self.cuda_initialised = use
        if not self.recording:
            return
        evidence = self.program.facts.distributed
        root = device.root or (device_value.origin if device_value is not None and device_value.origin is not None else use)
        if device.kind in (CUDA, UNGUARDED, SELECTED) and device.index is None and device.key != PER_RANK:
            evidence.shared_placements.append(root)
        imported = device_value is not None and device_value.source == PROJECT_SOURCE
        if device.kind == UNGUARDED and not env.guarded and not imported:  # an imported root is reported at home
            chosen = self.chosen_device_in_scope(env) if bare_cuda else ""
            self.program.facts.unguarded.append(UnguardedAccelerator(root, use, chosen, bare_cuda))

    def chosen_device_in_scope(self, env) -> str:
        """A device the code chose (SELECTED, a parameter, `args.device`) that a `.cuda()` ignores."""
        if self.chosen_device:
            return self.chosen_device
        for values in [env.values] + [outer.values for outer in self.scope.outer]:
            for key, value in values.items():
                if value.kind == DEVICE and value.device.kind in (SELECTED, SYMBOLIC):
                    return key
                if value.kind == ANY and not value.device.known and api.is_device_name(key) and "." not in key:
                    if key in self.parameter_names:
                        return key
        return ""

    def note_cuda_call(self, qualname: str, node: cst.CSTNode) -> None:
        if self.cuda_initialised is None and qualname.startswith(api.CUDA_NAMESPACE) and qualname not in api.CUDA_LAZY_SAFE:
            self.cuda_initialised = node

    def note_environment_write(self, key_node: Optional[cst.BaseExpression], node: cst.CSTNode) -> None:
        """`os.environ["CUDA_VISIBLE_DEVICES"] = ...` after CUDA has started reads nothing."""
        if key_node is None or string_value(key_node) != api.VISIBLE_DEVICES:
            return
        if self.cuda_initialised is not None and self.recording:
            self.program.facts.visible_devices_late.append(VisibleDevicesTooLate(node, self.cuda_initialised))


def environment_key(target: cst.Subscript) -> Optional[cst.BaseExpression]:
    """The key of `os.environ[KEY]`, or None for any other subscript."""
    if dotted_name(target.value) != "os.environ" or len(target.slice) != 1:
        return None
    index = target.slice[0].slice
    return index.value if isinstance(index, cst.Index) else None
