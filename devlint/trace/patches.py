"""Attribute patches that are always undone, in reverse order."""
from __future__ import annotations

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
