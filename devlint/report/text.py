"""`--output-format text`: `path:line:col: CODE message`, a summary, statistics.

Columns are printed 1-based here, as editors and flake8's output count them;
JSON keeps DESIGN's 0-based columns.
"""
from __future__ import annotations

from collections import Counter
from typing import Sequence

from ..diagnostics import Diagnostic
from ..rules import RULES_BY_CODE


def format_text(diagnostics: Sequence[Diagnostic]) -> str:
    return "".join(f"{d.path}:{d.line}:{d.column + 1}: {d.code} {d.message}\n" for d in diagnostics)


def format_summary(diagnostics: Sequence[Diagnostic], files_checked: int) -> str:
    files = "file" if files_checked == 1 else "files"
    if not diagnostics:
        return f"All checks passed ({files_checked} {files} checked).\n"
    count = len(diagnostics)
    noun = "problem" if count == 1 else "problems"
    with_findings = len({d.path for d in diagnostics})
    return f"Found {count} {noun} in {with_findings} of {files_checked} {files} checked.\n"


def format_statistics(diagnostics: Sequence[Diagnostic]) -> str:
    counts = Counter(d.code for d in diagnostics)
    lines = []
    for code, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        rule = RULES_BY_CODE.get(code)
        lines.append(f"{count:>6}  {code}  {rule.name if rule else ''}")
    return "\n".join(lines) + ("\n" if lines else "")
