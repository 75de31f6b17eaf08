"""A diagnostic: one finding at one place, in the shape DESIGN §4 fixes."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Optional


@dataclass(frozen=True)
class Diagnostic:
    code: str
    name: str
    severity: str
    message: str
    path: str
    line: int          # 1-based
    column: int        # 0-based, as flake8 expects from plugins
    end_line: int
    end_column: int
    fix: Optional[Dict[str, Any]] = None
    #: With `--confirm`: "confirmed", "contradicted" or "not reached" by a runtime trace.
    trace: Optional[str] = None

    def sort_key(self):
        return (self.path, self.line, self.column, self.code)

    def to_json(self) -> Dict[str, Any]:
        return {
            "code": self.code,
            "name": self.name,
            "severity": self.severity,
            "message": self.message,
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
            "fix": self.fix,
            **({"trace": self.trace} if self.trace is not None else {}),
        }
