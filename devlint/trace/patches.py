"""Attribute patches that are always undone, in reverse order."""
from __future__ import annotations

import threading

_MISSING = object()


class Patches:
    def __init__(self):
        self._saved: list = []

    def set(self, owner, name: str, value) -> None:
        # A class's own __dict__ entry keeps staticmethod/classmethod wrappers.
        if isinstance(owner, type):
            old = owner.__dict__.get(name, _MISSING)
        else:
            old = getattr(owner, name, _MISSING)
        self._saved.append((owner, name, old))
        setattr(owner, name, value)

    def restore(self) -> None:
        while self._saved:
            owner, name, old = self._saved.pop()
            if old is _MISSING:
                delattr(owner, name)
            else:
                setattr(owner, name, old)


def run_threads_in(patches: Patches, tracer) -> None:
    """Function modes are per thread: threads started while tracing (DataLoader's pin-memory
    thread, user threads) enter `tracer.mode` too. `_bootstrap_inner` also covers Thread
    subclasses that override `run()`."""
    name = "_bootstrap_inner" if hasattr(threading.Thread, "_bootstrap_inner") else "run"
    original = getattr(threading.Thread, name)

    def run_in_mode(thread):
        if tracer.mode is None:
            return original(thread)
        with tracer.mode:
            return original(thread)
    patches.set(threading.Thread, name, run_in_mode)
