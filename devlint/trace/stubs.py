"""Harmless stand-ins for torch.cuda / torch.accelerator on a CPU build.

These are plain Python functions, not torch functions, so the mode cannot
see them: they are patched for the duration of a simulation.
"""
from __future__ import annotations

import os
import sys
import time
from types import SimpleNamespace

import torch

_TORCH_DIR = os.path.dirname(torch.__file__)
GPU_NAME = "devlint simulated GPU"


class _Stream:
    def __init__(self, device=None, priority=0, **kwargs):
        self.device = device

    def synchronize(self):
        pass

    def wait_stream(self, stream):
        pass

    def wait_event(self, event):
        pass

    def record_event(self, event=None):
        event = event or _Event()
        event.record(self)
        return event

    def query(self):
        return True

    def is_capturing(self):
        return False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class _Event:
    def __init__(self, enable_timing=False, blocking=False, interprocess=False, **kwargs):
        self._t = None

    def record(self, stream=None):
        self._t = time.perf_counter()

    def synchronize(self):
        pass

    def wait(self, stream=None):
        pass

    def query(self):
        return True

    def elapsed_time(self, end):
        return (end._t - self._t) * 1000.0  # milliseconds, as CUDA events do


# A fresh function per patched name: torch._dynamo, when imported while
# patched, refuses one function object registered under two names.
def _noop_factory():
    def noop(*args, **kwargs):
        return None
    return noop


def _zero_factory():
    def zero(*args, **kwargs):
        return 0
    return zero


def install(sim, patches) -> None:
    table = sim.table

    def note_check():
        # A check made by torch itself (DataLoader, DataParallel) is not the user's.
        caller = sys._getframe(2).f_code.co_filename
        if not caller.startswith(_TORCH_DIR):
            sim.checked = True

    def is_available():
        note_check()
        return True

    def device_count():
        note_check()
        return table.n

    def current_device():
        return table.current

    def set_device(device):
        if device is not None and device != -1:
            table.current = table.index_of(device)

    def properties(device=None):
        return SimpleNamespace(
            name=GPU_NAME, major=8, minor=0, total_memory=80 * 2**30,
            multi_processor_count=108, is_integrated=False)

    class device:  # torch.cuda.device(...) and torch.accelerator.device_index(...)
        def __init__(self, device):
            self.index = None if device is None or device == -1 else table.index_of(device)

        def __enter__(self):
            self.prev = table.current
            if self.index is not None:
                table.current = self.index
            return self

        def __exit__(self, *exc):
            table.current = self.prev
            return False

    cuda = torch.cuda
    for name, value in {
        "is_available": is_available,
        "device_count": device_count,
        "current_device": current_device,
        "set_device": set_device,
        "get_device_name": lambda device=None: GPU_NAME,
        "get_device_properties": properties,
        "get_device_capability": lambda device=None: (8, 0),
        "is_bf16_supported": lambda *a, **k: True,
        "is_initialized": lambda: True,
        "init": _noop_factory(),
        "synchronize": _noop_factory(),
        "empty_cache": _noop_factory(),
        "reset_peak_memory_stats": _noop_factory(),
        "memory_allocated": _zero_factory(),
        "max_memory_allocated": _zero_factory(),
        "memory_reserved": _zero_factory(),
        "max_memory_reserved": _zero_factory(),
        "mem_get_info": lambda device=None: (80 * 2**30, 80 * 2**30),
        "manual_seed": _noop_factory(),
        "manual_seed_all": _noop_factory(),
        "seed": _noop_factory(),
        "seed_all": _noop_factory(),
        "is_current_stream_capturing": lambda: False,
        "device": device,
        "Stream": _Stream,
        "Event": _Event,
        "stream": lambda stream=None: stream if stream is not None else _Stream(),
        "current_stream": lambda device=None: _Stream(device),
        "default_stream": lambda device=None: _Stream(device),
    }.items():
        patches.set(cuda, name, value)

    acc = getattr(torch, "accelerator", None)
    if acc is None:
        return
    for name, value in {
        "is_available": lambda: is_available(),
        "device_count": lambda: device_count(),
        "current_accelerator": lambda check_available=False: torch.device("cuda"),
        "current_device_index": lambda: table.current,
        "current_device_idx": lambda: table.current,
        "set_device_index": lambda device: set_device(device),
        "set_device_idx": lambda device: set_device(device),
        "device_index": type("device_index", (device,), {}),
        "synchronize": _noop_factory(),
        "current_stream": lambda device=None: _Stream(device),
        "set_stream": _noop_factory(),
        "empty_cache": _noop_factory(),
    }.items():
        if hasattr(acc, name):
            patches.set(acc, name, value)
