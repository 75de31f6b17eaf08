"""A simulated accelerator on a CPU-only machine.

    with Simulation(n_gpus=2, recorder=rec, keep_going=False):
        ...  # code that uses "cuda" runs on CPU tensors tagged cuda:i

Everything patched is restored on exit, errors included.
"""
from __future__ import annotations


import torch
import torch.utils._device  # noqa: F401  (set_default_device's home)

from . import parallel, stubs
from .devices import CPU, TAG, DeviceTable
from .events import Recorder
from .mode import SimulatedCudaMode
from .patches import Patches, run_threads_in


def _tag_tree(obj, dev) -> None:
    if isinstance(obj, torch.Tensor):
        setattr(obj, TAG, dev)
    elif isinstance(obj, dict):
        for v in obj.values():
            _tag_tree(v, dev)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            _tag_tree(v, dev)


class Simulation:
    def __init__(self, n_gpus: int = 2, recorder: Recorder | None = None,
                 keep_going: bool = False):
        if n_gpus < 1:
            raise ValueError("n_gpus must be at least 1")
        self.table = DeviceTable(n_gpus)
        self.recorder = recorder if recorder is not None else Recorder()
        self.keep_going = keep_going
        self.checked = False           # is_available()/device_count() called by user code
        self.accelerator_used = False  # some cuda device was requested
        self.mode: SimulatedCudaMode | None = None
        self._patches: Patches | None = None

    def __enter__(self) -> Simulation:
        self._patches = patches = Patches()
        try:
            stubs.install(self, patches)
            patches.set(torch.nn.DataParallel, "forward", parallel.data_parallel_forward)
            patches.set(torch.nn.Parameter, "__new__", staticmethod(self._parameter_new()))
            patches.set(torch, "load", self._load(torch.load))
            patches.set(torch.utils._device.DeviceContext, "__torch_function__",
                        self._device_context(torch.utils._device.DeviceContext.__torch_function__))
            run_threads_in(patches, self)
            self._default_device = getattr(torch._GLOBAL_DEVICE_CONTEXT, "device_context", None)
            self._stack_depth = torch._C._len_torch_function_stack()
            self.mode = SimulatedCudaMode(self)
            self.mode.__enter__()
        except BaseException:
            patches.restore()
            raise
        return self

    def __exit__(self, *exc) -> bool:
        try:
            # The program may have left torch.set_default_device("cuda") or a
            # mode of its own on the stack above ours.
            if getattr(torch._GLOBAL_DEVICE_CONTEXT, "device_context", None) is not self._default_device:
                torch.set_default_device(None)
            while torch._C._len_torch_function_stack() > self._stack_depth:
                torch._C._pop_torch_function_stack()
            self.mode.flush_loop_counts()
        finally:
            self._patches.restore()
        return False

    # ---- patches ------------------------------------------------------
    def _parameter_new(self):
        original = torch.nn.Parameter.__new__

        def new(cls, data=None, requires_grad=True):
            # Tensor._make_subclass is invisible to the mode: copy the tag here.
            param = original(cls, data, requires_grad)
            dev = getattr(data, TAG, None)
            if dev is not None:
                setattr(param, TAG, dev)
            return param
        return new

    def _device_context(self, original):
        # `with torch.device("cuda")` and set_default_device("cuda") put a
        # DeviceContext at the bottom of the mode stack, below ours: it sees
        # factories last and would ask the CPU build for real cuda memory.
        sim = self
        constructors = torch.utils._device._device_constructors()

        def torch_function(ctx, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if func in constructors and kwargs.get("device") is None:
                target = sim.table.parse(ctx.device)
                if target is not None and target is not CPU and sim.mode is not None:
                    return sim.mode._device_kwarg(func, args, kwargs, ctx.device)
            return original(ctx, func, types, args, kwargs)
        return torch_function

    def _load(self, original):
        table = self.table

        def load(f, map_location=None, *args, **kwargs):
            target = None
            if map_location is None:
                # Files saved under simulation hold CPU storages; files saved on
                # a real GPU would need CUDA to load without a map_location.
                map_location = "cpu"
            elif isinstance(map_location, (str, torch.device, int)):
                target = table.parse(map_location)
                if target is not None and target is not CPU:
                    map_location = "cpu"
                else:
                    target = None
            obj = original(f, map_location, *args, **kwargs)
            if target is not None:
                _tag_tree(obj, target)
            return obj
        return load

