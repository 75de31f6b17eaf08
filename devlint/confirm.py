"""Static findings against a runtime trace (`devlint check --confirm trace.json`).

Each finding of a rule the tracer can observe is `confirmed` (an event that shows
its bug happened on its lines, or in code its lines called), `contradicted` (its
lines ran and no such event happened) or `not reached` (its lines never ran).
Events no finding predicted are the analysis's misses. No torch here: a trace is
JSON written by `devlint trace`.
"""
from __future__ import annotations

import json
import os
from dataclasses import replace
from typing import Dict, Iterable, List, Set, Tuple

from .config import ConfigError
from .diagnostics import Diagnostic

CONFIRMED, CONTRADICTED, NOT_REACHED = "confirmed", "contradicted", "not reached"

#: The runtime events that show each rule's bug; rules not listed cannot be observed by running.
EVIDENCE: Dict[str, Set[str]] = {
    **{code: {"device-mismatch"} for code in ("DEV101", "DEV102", "DEV103", "DEV107")},
    **{code: {"data-parallel-placement"} for code in ("DEV201", "DEV202")},
    "DEV106": {"numpy-on-accelerator"},
    **{code: {"accelerator-without-check"} for code in ("DEV301", "DEV303", "DEV305", "DEV306")},
    "DEV401": {"host-sync"},
    "DEV402": {"created-then-moved", "cpu-factory-in-loop"},
}
#: What the exception that ended a run shows, by the words of its message.
_EXCEPTION_KINDS = (
    ("Expected all tensors to be on the same device", "device-mismatch"),
    ("module must have its parameters and buffers on device", "data-parallel-placement"),
    ("device type tensor to numpy", "numpy-on-accelerator"),
    ("Torch not compiled with CUDA enabled", "accelerator-without-check"),
)

Location = Tuple[str, int]


class TraceEvent:
    """An event, or the exception that ended the run, with every user line it passed through."""

    def __init__(self, kind: str, message: str, file: str, line: int, callers: Iterable, count: int = 1) -> None:
        self.kind, self.message, self.count = kind, message, count
        self.at = (file, line)
        self.locations: List[Location] = [(_key(file), line)] + [(_key(f), n) for f, n in callers]


def _key(path: str) -> str:
    return os.path.normcase(os.path.realpath(path))


def load_trace(path: str) -> Tuple[List[TraceEvent], Dict[str, Set[int]]]:
    """The events of a trace file and the watched lines that ran, by file."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
        events = [TraceEvent(e["kind"], e["message"], e["file"], e["line"], e.get("callers", []), e.get("count", 1))
                  for e in data["events"]]
        failure = data.get("exception")
        reached = {_key(file): set(lines) for file, lines in data.get("reached", {}).items()}
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ConfigError(f"cannot read the trace {path}: {error}") from None
    if failure and failure.get("file"):
        kind = next((k for words, k in _EXCEPTION_KINDS if words in failure["message"]), None)
        if kind is not None:
            events.append(TraceEvent(kind, failure["message"], failure["file"], failure["line"],
                                     failure.get("callers", [])))
    return events, reached


def confirm(diagnostics: List[Diagnostic], events: List[TraceEvent],
            reached: Dict[str, Set[int]]) -> Tuple[List[Diagnostic], List[TraceEvent]]:
    """The diagnostics with their status (None for rules a run cannot show), and the events
    that no finding predicted."""
    explained: Set[int] = set()
    marked = []
    for diagnostic in diagnostics:
        kinds = EVIDENCE.get(diagnostic.code)
        if kinds is None:
            marked.append(diagnostic)
            continue
        file, lines = _key(diagnostic.path), range(diagnostic.line, diagnostic.end_line + 1)
        matching = [i for i, event in enumerate(events)
                    if event.kind in kinds and any(f == file and n in lines for f, n in event.locations)]
        explained.update(matching)
        if matching:
            status = CONFIRMED
        elif any(n in reached.get(file, ()) for n in lines):
            status = CONTRADICTED
        else:
            status = NOT_REACHED
        marked.append(replace(diagnostic, trace=status))
    return marked, [event for i, event in enumerate(events) if i not in explained]


def format_unpredicted(events: List[TraceEvent]) -> str:
    if not events:
        return ""
    lines = ["Runtime events no finding predicted:"]
    for event in events:
        times = f" (x{event.count})" if event.count > 1 else ""
        lines.append(f"  {event.at[0]}:{event.at[1]}: {event.kind}{times}: {event.message}")
    return "\n".join(lines) + "\n"


