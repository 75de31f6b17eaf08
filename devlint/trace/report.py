"""What a traced run produced. No torch here."""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from .events import Event


@dataclass
class Failure:
    """The exception that ended the program, at the user's line."""
    type: str
    message: str
    file: str | None
    line: int | None
    callers: list = field(default_factory=list)   # outer user frames, (file, line), outward

    def as_dict(self) -> dict:
        return {"type": self.type, "message": self.message, "file": self.file, "line": self.line,
                "callers": [list(caller) for caller in self.callers]}


@dataclass
class Report:
    mode: str                      # "simulated" or "cuda" (a real GPU)
    gpus: int                      # simulated GPUs, or real ones visible
    exit_status: int               # what `python prog.py` would exit with
    exception: Failure | None = None
    events: list[Event] = field(default_factory=list)
    #: Of the lines the run was asked to watch (static findings), those that ran, by file.
    reached: dict = field(default_factory=dict)

    def events_of(self, kind: str) -> list[Event]:
        return [e for e in self.events if e.kind == kind]

    def as_dict(self) -> dict:
        return {
            "mode": self.mode,
            "gpus": self.gpus,
            "exit_status": self.exit_status,
            "exception": self.exception.as_dict() if self.exception else None,
            "events": [e.as_dict() for e in self.events],
            "reached": self.reached,
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.as_dict(), indent=indent)
