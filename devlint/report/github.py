"""`--output-format github`: GitHub Actions workflow commands, one annotation per finding."""
from __future__ import annotations

from typing import Sequence

from ..diagnostics import Diagnostic

_COMMANDS = {"error": "error", "warning": "warning", "info": "notice"}


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def format_github(diagnostics: Sequence[Diagnostic]) -> str:
    lines = []
    for d in diagnostics:
        command = _COMMANDS.get(d.severity, "warning")
        where = (f"file={_property(d.path)},line={d.line},col={d.column + 1},"
                 f"endLine={d.end_line},endColumn={d.end_column + 1},title={_property(f'{d.code} ({d.name})')}")
        lines.append(f"::{command} {where}::{_data(f'{d.code} {d.message}')}\n")
    return "".join(lines)
