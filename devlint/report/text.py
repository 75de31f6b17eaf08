"""`--output-format text`: `path:line:col: CODE message`, a summary, statistics.

Columns are printed 1-based here, as editors and flake8's output count them;
JSON keeps DESIGN's 0-based columns.
"""
from __future__ import annotations

from collections import Counter
from typing import Sequence, Tuple

from ..diagnostics import Diagnostic
from ..fixes.model import SAFE
from ..rules import RULES_BY_CODE


def format_text(diagnostics: Sequence[Diagnostic], unsafe_enabled: bool = False, show_fixes: bool = False) -> str:
    """One line per finding; `[*]` marks the ones `--fix` repairs, `--show-fixes` says how."""
    out = []
    for d in diagnostics:
        fixable = d.fix is not None and (unsafe_enabled or d.fix["applicability"] == SAFE)
        status = f" [{d.trace}]" if d.trace is not None else ""
        out.append(f"{d.path}:{d.line}:{d.column + 1}: {d.code}{' [*]' if fixable else ''} {d.message}{status}\n")
        if show_fixes and d.fix is not None:
            out.append(f"    fix ({d.fix['applicability']}): {d.fix['message']}\n")
    return "".join(out)


def format_summary(diagnostics: Sequence[Diagnostic], files_checked: int, fixed: int = 0) -> str:
    files = "file" if files_checked == 1 else "files"
    count = len(diagnostics)
    noun = "problem" if count == 1 else "problems"
    if fixed:
        repaired = f"Fixed {fixed} {'problem' if fixed == 1 else 'problems'}"
        if not diagnostics:
            return f"{repaired}; none remain ({files_checked} {files} checked).\n"
        with_findings = len({d.path for d in diagnostics})
        return f"{repaired}; {count} {noun} remain in {with_findings} of {files_checked} {files} checked.\n"
    if not diagnostics:
        return f"All checks passed ({files_checked} {files} checked).\n"
    with_findings = len({d.path for d in diagnostics})
    return f"Found {count} {noun} in {with_findings} of {files_checked} {files} checked.\n"


def format_statistics(diagnostics: Sequence[Diagnostic]) -> str:
    counts = Counter(d.code for d in diagnostics)
    lines = []
    for code, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        rule = RULES_BY_CODE.get(code)
        lines.append(f"{count:>6}  {code}  {rule.name if rule else ''}")
    return "\n".join(lines) + ("\n" if lines else "")


def fixable_counts(diagnostics: Sequence[Diagnostic]) -> Tuple[int, int]:
    """(findings with a safe fix, findings with only an unsafe one)."""
    safe = sum(1 for d in diagnostics if d.fix is not None and d.fix["applicability"] == SAFE)
    unsafe = sum(1 for d in diagnostics if d.fix is not None and d.fix["applicability"] != SAFE)
    return safe, unsafe


def format_fix_hint(diagnostics: Sequence[Diagnostic], unsafe_enabled: bool) -> str:
    """ruff's hint: how many findings `--fix` would repair."""
    safe, unsafe = fixable_counts(diagnostics)
    if unsafe_enabled:
        total = safe + unsafe
        return f"[*] {total} fixable with `--fix --unsafe-fixes`.\n" if total else ""
    if not safe and not unsafe:
        return ""
    hint = f"[*] {safe} fixable with `--fix`" if safe else "No fixes available with `--fix`"
    if unsafe:
        hint += f" ({unsafe} more with `--unsafe-fixes`)"
    return hint + ".\n"


def format_fixed(fixed: Sequence[Diagnostic]) -> str:
    """`--show-fixes`: what was fixed, per file and rule."""
    if not fixed:
        return "No problems fixed.\n"
    noun = "problem" if len(fixed) == 1 else "problems"
    out = [f"Fixed {len(fixed)} {noun}:\n"]
    by_path: dict = {}
    for diagnostic in fixed:
        by_path.setdefault(diagnostic.path, Counter())[(diagnostic.code, diagnostic.name)] += 1
    for path in sorted(by_path):
        out.append(f"- {path}:\n")
        for (code, name), count in sorted(by_path[path].items()):
            out.append(f"    {count} \u00d7 {code} ({name})\n")
    return "".join(out)
