"""Runtime events, counted by (kind, file, line) at the user's line.

No torch here: the recorder only looks at Python frames.
"""
from __future__ import annotations

import os
import site
import sys
import sysconfig
from dataclasses import dataclass, field
from typing import Optional

KINDS = (
    "device-mismatch",
    "accelerator-without-check",
    "host-sync",
    "numpy-on-accelerator",
    "created-then-moved",
    "cpu-factory-in-loop",
)


@dataclass
class Event:
    kind: str
    file: str
    line: int
    count: int
    message: str
    #: The user frames that called the one at `line`, outward: a mismatch inside `forward`
    #: was caused at the `model(x)` line that called it. The union over occurrences, bounded.
    callers: list = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"kind": self.kind, "file": self.file, "line": self.line,
                "count": self.count, "message": self.message,
                "callers": [list(caller) for caller in self.callers]}


def _library_dirs() -> tuple[str, ...]:
    """Directories whose code is never the user's: stdlib, installed packages,
    torch and devlint itself."""
    dirs = set()
    paths = sysconfig.get_paths()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        if paths.get(key):
            dirs.add(paths[key])
    try:
        dirs.update(site.getsitepackages())
    except AttributeError:  # old virtualenv's site module
        pass
    user_site = getattr(site, "getusersitepackages", lambda: None)()
    if user_site:
        dirs.add(user_site)
    # The base interpreter's stdlib, when running inside a venv.
    dirs.add(os.path.dirname(os.__file__))
    dirs.add(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # devlint/
    torch_mod = sys.modules.get("torch")
    if torch_mod is not None and getattr(torch_mod, "__file__", None):
        dirs.add(os.path.dirname(torch_mod.__file__))
    return tuple(sorted(os.path.normcase(os.path.realpath(d)) + os.sep for d in dirs))


class FrameFilter:
    """Decides whether a code object is the user's, once per code object."""

    def __init__(self, root: str | None = None):
        self.root = os.path.normcase(os.path.realpath(root)) + os.sep if root else None
        self.library = _library_dirs()
        self._verdicts: dict = {}

    def is_user(self, code) -> bool:
        verdict = self._verdicts.get(code)
        if verdict is None:
            verdict = self._verdicts[code] = self._judge(code.co_filename)
        return verdict

    def _judge(self, filename: str) -> bool:
        if not filename or filename.startswith("<"):
            return False  # <frozen ...>, <string>: no file to point at
        path = os.path.normcase(os.path.realpath(filename))
        if path.startswith(self.library):
            return False
        if self.root is not None:
            return path.startswith(self.root)
        return True

    def user_frame(self, frame):
        """The innermost frame of user code at or above `frame`, or None."""
        is_user = self.is_user
        while frame is not None:
            if is_user(frame.f_code):
                return frame
            frame = frame.f_back
        return None


#: How far out a caller chain is followed.
MAX_CALLERS = 8


class Recorder:
    """Counts events by (kind, file, line). Frames are walked only when an
    event is recorded, never per op."""

    def __init__(self, root: str | None = None):
        self.filter = FrameFilter(root)
        self._events: dict[tuple[str, str, int], Event] = {}

    def record(self, kind: str, message: str, *, once: bool = False) -> None:
        frame = self.filter.user_frame(sys._getframe(1))
        if frame is None:
            file, line = "<unknown>", 0
        else:
            file, line = frame.f_code.co_filename, frame.f_lineno
        self.record_at(kind, file, line, message, once=once, callers=self.callers_of(frame))

    def callers_of(self, frame) -> list:
        """(file, line) of the user frames that called `frame`, outward."""
        found = []
        frame = frame.f_back if frame is not None else None
        while frame is not None and len(found) < MAX_CALLERS:
            frame = self.filter.user_frame(frame)
            if frame is None:
                break
            found.append((frame.f_code.co_filename, frame.f_lineno))
            frame = frame.f_back
        return found

    def record_at(self, kind: str, file: str, line: int, message: str,
                  *, once: bool = False, count: int = 1, callers: Optional[list] = None) -> None:
        key = (kind, file, line)
        event = self._events.get(key)
        if event is None:
            event = self._events[key] = Event(kind, file, line, count, message)
        elif not once:
            event.count += count
        for caller in callers or ():
            if caller not in event.callers and len(event.callers) < MAX_CALLERS * 4:
                event.callers.append(caller)

    def events(self) -> list[Event]:
        return sorted(self._events.values(), key=lambda e: (e.file, e.line, e.kind))
