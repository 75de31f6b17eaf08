"""What a fix is: text edits, an applicability and a one-line description.

Positions are those of DESIGN §4: lines 1-based, columns 0-based, counted in
characters of the decoded source.  The JSON form is the contract; a fix read
back from the cache or from JSON is the same fix.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Tuple

#: Keeps behaviour on a machine with the accelerator; applied by `--fix`.
SAFE = "safe"
#: May change behaviour (on CPU machines, or for code we cannot see); needs `--unsafe-fixes`.
UNSAFE = "unsafe"


@dataclass(frozen=True)
class Edit:
    line: int
    column: int
    end_line: int
    end_column: int
    content: str

    def to_json(self) -> Dict[str, Any]:
        return {"line": self.line, "column": self.column, "end_line": self.end_line,
                "end_column": self.end_column, "content": self.content}

    @classmethod
    def from_json(cls, data: Dict[str, Any]) -> "Edit":
        return cls(int(data["line"]), int(data["column"]), int(data["end_line"]), int(data["end_column"]),
                   str(data["content"]))


@dataclass(frozen=True)
class Fix:
    applicability: str
    message: str
    edits: Tuple[Edit, ...]

    def to_json(self) -> Dict[str, Any]:
        return {"applicability": self.applicability, "message": self.message,
                "edits": [edit.to_json() for edit in self.edits]}

    @classmethod
    def from_json(cls, data: Dict[str, Any]) -> "Fix":
        return cls(str(data["applicability"]), str(data["message"]),
                   tuple(Edit.from_json(edit) for edit in data["edits"]))
