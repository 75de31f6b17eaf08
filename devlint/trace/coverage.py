"""Which of a few watched lines ran: how a trace tells "this finding's line ran and
nothing happened" (contradicted) from "it never ran" (not reached).

Only code objects of watched files get a line tracer; every other frame (torch,
the standard library, the rest of the program) is left untraced, so the cost
stays on the watched files.
"""
from __future__ import annotations

import os
import sys
import threading
from typing import Dict, Iterable, Set


def _key(filename: str) -> str:
    return os.path.normcase(os.path.realpath(filename))


class LineWatch:
    def __init__(self, lines: Dict[str, Iterable[int]]) -> None:
        self.lines = {_key(path): set(numbers) for path, numbers in lines.items()}
        self.reached: Dict[str, Set[int]] = {}
        self._watched_by_code: dict = {}
        self._previous = None

    def _global(self, frame, event, arg):
        code = frame.f_code
        watched = self._watched_by_code.get(code)
        if watched is None:
            watched = self._watched_by_code[code] = self.lines.get(_key(code.co_filename), set())
        if not watched:
            return None
        reached = self.reached.setdefault(code.co_filename, set())

        def local(frame, event, arg):
            if event == "line" and frame.f_lineno in watched:
                reached.add(frame.f_lineno)
            return local
        return local

    def __enter__(self) -> "LineWatch":
        if self.lines:
            self._previous = sys.gettrace()
            sys.settrace(self._global)
            threading.settrace(self._global)
        return self

    def __exit__(self, *exc) -> bool:
        if self.lines:
            sys.settrace(self._previous)
            threading.settrace(None)
        return False

    def as_dict(self) -> Dict[str, list]:
        return {path: sorted(lines) for path, lines in sorted(self.reached.items()) if lines}
