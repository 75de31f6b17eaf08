"""The torch function mode that simulates cuda devices on CPU tensors.

Every Python call into torch passes through `__torch_function__`. Most calls
take the generic path: a hand-written scan of the arguments finds their
virtual devices (pytree flattening costs ~2x more), the op runs on the real
CPU tensors, and its outputs get the common device. A few calls (device
queries, moves, host syncs, factories) have handlers.
"""
from __future__ import annotations

import re
import sys

import torch
from torch.overrides import TorchFunctionMode

from .devices import (CPU, ORIGIN, TAG, mismatch_message, numpy_message,
                      set_tag, tag_outputs)

Tensor = torch.Tensor
_to = torch.Tensor.to
LOOP_THRESHOLD = 10  # factory calls from one line before it counts as "in a loop"


class _Mismatch(Exception):
    def __init__(self, first, second):
        self.first, self.second = first, second


def _scan(seq, common, cpus, nested):
    """(common accelerator device, CPU tensors) of `seq`, one list level deep."""
    for a in seq:
        if isinstance(a, Tensor):
            d = getattr(a, TAG, None)
            if d is None:
                if cpus is None:
                    cpus = [a]
                else:
                    cpus.append(a)
            elif common is None:
                common = d
            elif d is not common:
                raise _Mismatch(common, d)
        elif nested and (type(a) is list or type(a) is tuple):
            common, cpus = _scan(a, common, cpus, False)
    return common, cpus


_SUFFIX = re.compile(r", [a-z_]+=")


def _with_device(text: str, dev) -> str:
    # PyTorch prints device= as the first suffix after the data.
    m = _SUFFIX.search(text)
    at = m.start() if m else text.rindex(")")
    return f"{text[:at]}, device='{dev}'{text[at:]}"


class TracingMode(TorchFunctionMode):
    """Event bookkeeping shared by the simulated and the real-GPU modes.
    `sim` carries recorder, keep_going, checked and accelerator_used."""

    def __init__(self, sim):
        super().__init__()
        self.sim = sim
        self.rec = sim.recorder
        self.keep_going = sim.keep_going
        self.is_user = sim.recorder.filter.is_user
        self.loop_counts: dict[tuple[str, int], int] = {}

    def _request(self):
        """A cuda device was asked for."""
        self.sim.accelerator_used = True
        if not self.sim.checked:
            self.rec.record(
                "accelerator-without-check",
                "cuda is requested without a torch.cuda.is_available() check: "
                "this line fails on a machine without a GPU", once=True)

    def _sync(self, dev, what):
        self.rec.record(
            "host-sync",
            f"{what} on a {dev} tensor waits for the GPU and copies to the host")

    def _created_then_moved(self, t):
        origin = getattr(t, ORIGIN, None)
        if origin is None:
            return
        # Only moves written by the user count: Module.to() of parameters is fine.
        frame = sys._getframe(1)
        while frame is not None and frame.f_code not in _TF_CODES:
            frame = frame.f_back
        if frame is not None and self.is_user(frame.f_back.f_code):
            self.rec.record_at(
                "created-then-moved", origin[0], origin[1],
                "tensor is created on the CPU and then moved to cuda: "
                "create it there with device=")

    def _note_factory(self, result):
        """Remembers where a CPU factory call in user code made `result`."""
        caller = sys._getframe(3)  # _h_factory <- __torch_function__ <- caller
        if (self.is_user(caller.f_code) and isinstance(result, Tensor)
                and getattr(result, TAG, None) is None):
            where = (caller.f_code.co_filename, caller.f_lineno)
            setattr(result, ORIGIN, where)
            if self.sim.accelerator_used:
                self.loop_counts[where] = self.loop_counts.get(where, 0) + 1

    def flush_loop_counts(self):
        for (file, line), n in self.loop_counts.items():
            if n >= LOOP_THRESHOLD:
                self.rec.record_at(
                    "cpu-factory-in-loop", file, line,
                    "a CPU tensor is created here again and again while the "
                    "program uses cuda: create it once, or on the device",
                    count=n)
        self.loop_counts.clear()

    def _h_reduce(self, func, args, kwargs):
        # Pickling (torch.save) keeps a tensor's __dict__: leave our marks out
        # of the file, which is written as CPU data anyway.
        state = args[0].__dict__
        saved = {k: state.pop(k) for k in _MARKS if k in state}
        try:
            return func(*args, **kwargs)
        finally:
            state.update(saved)


class SimulatedCudaMode(TracingMode):
    def __init__(self, sim):
        super().__init__(sim)
        self.table = sim.table

    # ---- the hot path -------------------------------------------------
    def __torch_function__(self, func, types, args=(), kwargs=None):
        if kwargs is None:
            kwargs = {}
        handler = _HANDLERS.get(func)
        if handler is not None:
            return handler(self, func, args, kwargs)
        if kwargs:
            dev = kwargs.get("device")
            if dev is not None:
                return self._device_kwarg(func, args, kwargs, dev)
        try:
            common, cpus = _scan(args, None, None, True)
            if kwargs:
                common, cpus = _scan(kwargs.values(), common, cpus, True)
        except _Mismatch as m:
            return self._mismatch(m.first, m.second, func, args, kwargs)
        if common is None:
            return func(*args, **kwargs)
        if cpus is not None:
            for c in cpus:
                if c.dim() != 0:  # 0-dim CPU tensors mix freely, as in ATen
                    return self._mismatch(common, CPU, func, args, kwargs)
        result = func(*args, **kwargs)
        tag_outputs(result, common)
        return result

    # ---- events -------------------------------------------------------
    def _mismatch(self, first, second, func, args, kwargs):
        msg = mismatch_message(first, second)
        self.rec.record("device-mismatch", msg)
        if not self.keep_going:
            raise RuntimeError(msg)
        result = func(*args, **kwargs)  # continue mode: run it on the CPU anyway
        tag_outputs(result, first)
        return result

    # ---- moves --------------------------------------------------------
    def _move(self, t, target, dtype=None, copy=False, extra=None):
        """t moved to `target` (CPU or a cuda device), as Tensor.to would."""
        src = getattr(t, TAG, None)
        kw = dict(extra) if extra else {}
        if dtype is not None:
            kw["dtype"] = dtype
        if target is CPU:
            if src is None:
                return _to(t, copy=copy, **kw)
            self._sync(src, "`.cpu()`/`.to('cpu')`")
            return _to(t, copy=True, **kw)  # a new tensor, so the tag can differ
        self._request()
        if src is target:
            result = _to(t, copy=copy, **kw)
        else:
            if src is None:
                self._created_then_moved(t)
            result = _to(t, copy=True, **kw)
        setattr(result, TAG, target)
        return result

    def _h_to(self, func, args, kwargs):
        t = args[0]
        device = dtype = None
        bools = []
        for a in args[1:]:
            if isinstance(a, Tensor):
                device = getattr(a, TAG, None) or CPU
                dtype = a.dtype
            elif isinstance(a, torch.dtype):
                dtype = a
            elif type(a) is bool:
                bools.append(a)
            elif a is not None:
                device = a
        copy = kwargs.get("copy", len(bools) > 1 and bools[1])
        device = kwargs.get("device", device)
        dtype = kwargs.get("dtype", dtype)
        if device is None:
            return self._generic(func, args, kwargs)
        target = device if device is CPU else self.table.parse(device)
        if target is None:  # meta, mps...: not simulated
            return func(*args, **kwargs)
        extra = {k: v for k, v in kwargs.items() if k in ("memory_format",)}
        return self._move(t, target, dtype, copy, extra)

    def _h_cuda(self, func, args, kwargs):
        dev = args[1] if len(args) > 1 else kwargs.get("device")
        target = self.table.cuda[self.table.index_of(dev)]
        extra = {k: v for k, v in kwargs.items() if k == "memory_format"}
        return self._move(args[0], target, extra=extra)

    def _h_cpu(self, func, args, kwargs):
        return self._move(args[0], CPU, extra=kwargs)

    def _generic(self, func, args, kwargs):
        d = getattr(args[0], TAG, None)
        result = func(*args, **kwargs)
        if d is not None:
            tag_outputs(result, d)
        return result

    # ---- factories ----------------------------------------------------
    def _device_kwarg(self, func, args, kwargs, dev):
        target = self.table.parse(dev)
        if target is None or target is CPU:
            return func(*args, **kwargs)
        self._request()
        kwargs = dict(kwargs, device=CPU)
        if kwargs.get("pin_memory"):
            kwargs["pin_memory"] = False
        result = func(*args, **kwargs)
        tag_outputs(result, target)
        return result

    def _h_factory(self, func, args, kwargs):
        dev = kwargs.get("device")
        if dev is not None:
            return self._device_kwarg(func, args, kwargs, dev)
        result = func(*args, **kwargs)
        self._note_factory(result)
        return result

    # ---- device queries -----------------------------------------------
    def _h_device(self, func, args, kwargs):
        return getattr(args[0], TAG, None) or func(*args, **kwargs)

    def _h_is_cuda(self, func, args, kwargs):
        return getattr(args[0], TAG, None) is not None or func(*args, **kwargs)

    def _h_is_cpu(self, func, args, kwargs):
        return getattr(args[0], TAG, None) is None and func(*args, **kwargs)

    def _h_get_device(self, func, args, kwargs):
        d = getattr(args[0], TAG, None)
        return func(*args, **kwargs) if d is None else d.index

    # ---- host syncs and numpy -----------------------------------------
    def _h_sync(self, func, args, kwargs):
        d = getattr(args[0], TAG, None)
        if d is not None:
            self._sync(d, SYNC_NAMES[func])
        return func(*args, **kwargs)

    def _h_numpy(self, func, args, kwargs):
        d = getattr(args[0], TAG, None)
        if d is not None:
            msg = numpy_message(d)
            self.rec.record("numpy-on-accelerator", msg)
            if not self.keep_going:
                raise TypeError(msg)
        return func(*args, **kwargs)

    # ---- indexing: CPU index tensors may index a cuda tensor ------------
    def _check_index(self, t, index):
        d = getattr(t, TAG, None)
        items = index if type(index) is tuple else (index,)
        for i in items:
            if isinstance(i, Tensor) and i.dim() != 0:
                di = getattr(i, TAG, None)
                if di is not None and di is not d:
                    raise RuntimeError(
                        "indices should be either on cpu or on the same device "
                        f"as the indexed tensor ({d or CPU})")
        return d

    def _h_getitem(self, func, args, kwargs):
        d = self._check_index(args[0], args[1])
        result = func(*args, **kwargs)
        if d is not None:
            tag_outputs(result, d)
        return result

    def _h_setitem(self, func, args, kwargs):
        # The value is copied in, and copies may cross devices.
        self._check_index(args[0], args[1])
        return func(*args, **kwargs)

    # ---- calls whose tensors may legitimately differ in device ----------
    def _h_passthrough(self, func, args, kwargs):
        return func(*args, **kwargs)

    def _h_set_data(self, func, args, kwargs):
        # `param.data = moved`: Module._apply keeps parameter identity this way.
        func(*args, **kwargs)
        set_tag(args[0], getattr(args[1], TAG, None))

    def _h_pin_memory(self, func, args, kwargs):
        # No pinned memory on this machine; a CPU tensor stands for itself.
        t = args[0]
        if getattr(t, TAG, None) is not None:
            return func(*args, **kwargs)  # PyTorch refuses too
        t._devlint_pinned = True
        return t

    def _h_is_pinned(self, func, args, kwargs):
        return getattr(args[0], "_devlint_pinned", False)

    # ---- printing -----------------------------------------------------
    def _h_repr(self, func, args, kwargs):
        text = func(*args, **kwargs)
        d = getattr(args[0], TAG, None)
        return text if d is None else _with_device(text, d)

    def _h_format(self, func, args, kwargs):
        t = args[0]
        if getattr(t, TAG, None) is not None and t.dim() != 0:
            return self._h_repr(Tensor.__repr__, (t,), {})
        return self._h_sync(func, args, kwargs)


_MARKS = (TAG, ORIGIN, "_devlint_pinned")

# Codes of every tracing mode's __torch_function__ (realgpu adds its own).
_TF_CODES = {SimulatedCudaMode.__torch_function__.__code__}

SYNC_NAMES = {
    Tensor.item: "`.item()`",
    Tensor.tolist: "`.tolist()`",
    Tensor.__bool__: "`bool()`/`if` of a tensor",
    Tensor.__float__: "`float()`",
    Tensor.__int__: "`int()`",
    Tensor.__format__: "formatting a 0-dim tensor",
}

FACTORIES = (
    torch.zeros, torch.ones, torch.empty, torch.full, torch.rand, torch.randn,
    torch.randint, torch.arange, torch.linspace, torch.logspace, torch.eye,
    torch.tensor, torch.as_tensor, torch.randperm,
)

_HANDLERS = {
    Tensor.to: SimulatedCudaMode._h_to,
    Tensor.cuda: SimulatedCudaMode._h_cuda,
    Tensor.cpu: SimulatedCudaMode._h_cpu,
    Tensor.device.__get__: SimulatedCudaMode._h_device,
    Tensor.is_cuda.__get__: SimulatedCudaMode._h_is_cuda,
    Tensor.is_cpu.__get__: SimulatedCudaMode._h_is_cpu,
    Tensor.get_device: SimulatedCudaMode._h_get_device,
    Tensor.numpy: SimulatedCudaMode._h_numpy,
    Tensor.__array__: SimulatedCudaMode._h_numpy,
    Tensor.__getitem__: SimulatedCudaMode._h_getitem,
    Tensor.__setitem__: SimulatedCudaMode._h_setitem,
    Tensor.copy_: SimulatedCudaMode._h_passthrough,
    torch._has_compatible_shallow_copy_type: SimulatedCudaMode._h_passthrough,
    Tensor.data.__set__: SimulatedCudaMode._h_set_data,
    Tensor.pin_memory: SimulatedCudaMode._h_pin_memory,
    Tensor.is_pinned: SimulatedCudaMode._h_is_pinned,
    Tensor.__repr__: SimulatedCudaMode._h_repr,
    Tensor.__format__: SimulatedCudaMode._h_format,
    Tensor.__reduce_ex__: TracingMode._h_reduce,
}
_HANDLERS.update({f: SimulatedCudaMode._h_sync for f in SYNC_NAMES if f is not Tensor.__format__})
_HANDLERS.update({f: SimulatedCudaMode._h_factory for f in FACTORIES})
