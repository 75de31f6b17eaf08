"""Tracing on a machine with a real GPU: nothing is simulated, only events
are recorded. Untested on hardware (this project's CI is CPU-only)."""
from __future__ import annotations

import re
import warnings

import torch

from . import stubs
from .events import Recorder
from .mode import _TF_CODES, FACTORIES, SYNC_NAMES, TracingMode
from .patches import Patches, run_threads_in

_MISMATCH_PREFIX = "Expected all tensors to be on the same device"
#: The words of the warning `set_sync_debug_mode("warn")` gives for each synchronizing call.
_SYNC_WARNING = "called a synchronizing CUDA operation"


class RealCudaMode(TracingMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        if kwargs is None:
            kwargs = {}
        handler = _HANDLERS.get(func)
        if handler is not None:
            return handler(self, func, args, kwargs)
        if kwargs and kwargs.get("device") is not None:
            self._note_device(kwargs["device"])
        try:
            return func(*args, **kwargs)
        except RuntimeError as e:
            if str(e).startswith(_MISMATCH_PREFIX):
                self.rec.record("device-mismatch", str(e).splitlines()[0])
            raise

    def _note_device(self, dev):
        if isinstance(dev, int) or torch.device(dev).type == "cuda":
            self._request()

    def _h_move(self, func, args, kwargs):
        t = args[0]
        result = func(*args, **kwargs)
        if result is not t and result.is_cuda and not t.is_cuda:
            self._request()
            self._created_then_moved(t)
        elif t.is_cuda and not result.is_cuda:
            self._sync(t.device, "`.cpu()`/`.to('cpu')`")
        return result

    def _h_sync(self, func, args, kwargs):
        if args[0].is_cuda:
            self._sync(args[0].device, SYNC_NAMES[func])
        return func(*args, **kwargs)

    def _h_numpy(self, func, args, kwargs):
        try:
            return func(*args, **kwargs)
        except TypeError as e:
            if args[0].is_cuda:
                self.rec.record("numpy-on-accelerator", str(e))
            raise

    def _h_factory(self, func, args, kwargs):
        dev = kwargs.get("device")
        if dev is not None:
            self._note_device(dev)
            return func(*args, **kwargs)
        result = func(*args, **kwargs)
        self._note_factory(result)
        return result


_TF_CODES.add(RealCudaMode.__torch_function__.__code__)

_HANDLERS = {
    torch.Tensor.to: RealCudaMode._h_move,
    torch.Tensor.cuda: RealCudaMode._h_move,
    torch.Tensor.cpu: RealCudaMode._h_move,
    torch.Tensor.numpy: RealCudaMode._h_numpy,
    torch.Tensor.__array__: RealCudaMode._h_numpy,
    torch.Tensor.__reduce_ex__: RealCudaMode._h_reduce,
}
_HANDLERS.update({f: RealCudaMode._h_sync for f in SYNC_NAMES})
_HANDLERS.update({f: RealCudaMode._h_factory for f in FACTORIES})


class RealTracing:
    """Records events on a real GPU; patches only wrap is_available() and
    device_count() to notice the user's checks, plus thread start-up."""

    def __init__(self, recorder: Recorder | None = None, keep_going: bool = False):
        self.recorder = recorder if recorder is not None else Recorder()
        self.keep_going = keep_going  # a real mismatch cannot be run anyway
        self.checked = False
        self.accelerator_used = False
        self.mode = None
        self._patches = None

    def __enter__(self) -> RealTracing:
        self._patches = patches = Patches()
        try:
            for owner in (torch.cuda, getattr(torch, "accelerator", None)):
                for name in ("is_available", "device_count"):
                    if owner is not None and hasattr(owner, name):
                        patches.set(owner, name, self._noting(getattr(owner, name)))
            self._depth = torch._C._len_torch_function_stack()
            self.mode = RealCudaMode(self)
            run_threads_in(patches, self)
            self._watch_syncs(patches)
            self.mode.__enter__()
        except BaseException:
            patches.restore()
            raise
        return self

    def __exit__(self, *exc) -> bool:
        try:
            while torch._C._len_torch_function_stack() > self._depth:
                torch._C._pop_torch_function_stack()
            self.mode.flush_loop_counts()
        finally:
            self._patches.restore()
            _warning_filters_changed()
            if self._sync_mode is not None:
                torch.cuda.set_sync_debug_mode(self._sync_mode)
        return False

    _sync_mode = None

    def _watch_syncs(self, patches) -> None:
        """CUDA's own sync detector: every synchronizing call warns (the mode sees only the
        outermost torch call; this also catches syncs inside torch, e.g. `nonzero`, masked
        assignment), and each warning is counted at the user's line instead of shown."""
        if not torch.cuda.is_available():  # a CPU build has no detector (the overhead benchmark)
            return
        self._sync_mode = torch.cuda.get_sync_debug_mode()
        torch.cuda.set_sync_debug_mode("warn")
        self._count_sync_warnings(patches)

    def _count_sync_warnings(self, patches) -> None:
        show = warnings.showwarning
        recorder = self.recorder

        def showwarning(message, category, filename, lineno, file=None, line=None):
            if _SYNC_WARNING in str(message):
                recorder.record("host-sync", "a synchronizing CUDA call (torch.cuda.set_sync_debug_mode)")
                return
            show(message, category, filename, lineno, file, line)
        patches.set(warnings, "showwarning", showwarning)
        # Every occurrence, not once per location, so that the counts are real.
        patches.set(warnings, "filters", [("always", re.compile(f".*{_SYNC_WARNING}"), UserWarning, None, 0),
                                          *warnings.filters])
        _warning_filters_changed()


    def _noting(self, original):
        import sys

        def wrapper(*args, **kwargs):
            if not sys._getframe(1).f_code.co_filename.startswith(stubs._TORCH_DIR):
                self.checked = True
            return original(*args, **kwargs)
        return wrapper


def _warning_filters_changed() -> None:
    # The warnings module caches verdicts per location; it must forget them when its filters
    # list is replaced (the function is private and its name changed in Python 3.14).
    changed = getattr(warnings, "_filters_mutated", None) or getattr(warnings, "_filters_mutated_lock_held", None)
    if changed is not None:
        changed()
