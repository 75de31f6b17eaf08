"""Reading `# expect:` annotations and comparing them with what devlint reports."""
from __future__ import annotations

import re
from pathlib import Path
from typing import List, Set, Tuple

from devlint.engine import check_text
from devlint.rules import ALL_RULES

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
PROJECTS = FIXTURES / "projects"
DEFAULT_CODES = frozenset(rule.code for rule in ALL_RULES if rule.default_enabled)
_EXPECT = re.compile(r"#\s*expect:\s*(?P<codes>DEV\d{3}(?:\s*,\s*DEV\d{3})*)")
_SELECT = re.compile(r"#\s*fixture-select:\s*(?P<codes>DEV\d{3}(?:\s*,\s*DEV\d{3})*)")


def enabled_for(text: str) -> frozenset:
    """The default rules, plus opt-in rules the fixture expects or names with `# fixture-select:`."""
    named = {code for _, code in expectations(text)}
    for match in _SELECT.finditer(text):
        named.update(code.strip() for code in match.group("codes").split(","))
    return DEFAULT_CODES | named


def expectations(text: str) -> Set[Tuple[int, str]]:
    found = set()
    for number, line in enumerate(text.splitlines(), start=1):
        match = _EXPECT.search(line)
        if match:
            found.update((number, code.strip()) for code in match.group("codes").split(","))
    return found


def mismatch_report(text: str, path: str) -> str:
    """Empty when devlint reports exactly the expected (line, code) pairs."""
    return compare(text, path, check_text(text, path, enabled_for(text)))


def compare(text: str, path: str, diagnostics) -> str:
    actual = {(d.line, d.code) for d in diagnostics}
    expected = expectations(text)
    lines = text.splitlines()
    problems: List[str] = []
    for line, code in sorted(expected - actual):
        problems.append(f"  missing    {path}:{line}: {code}   | {lines[line - 1].strip()}")
    for diagnostic in diagnostics:
        if (diagnostic.line, diagnostic.code) not in expected:
            problems.append(f"  unexpected {path}:{diagnostic.line}: {diagnostic.code} {diagnostic.message}"
                            f"   | {lines[diagnostic.line - 1].strip() if diagnostic.line <= len(lines) else ''}")
    return "\n".join(problems)


def project_files(folder: Path) -> List[Path]:
    """A project fixture's programs (its twins are not part of the project)."""
    return sorted(p for p in folder.rglob("*.py") if not p.name.endswith(".fixed.py"))


def fixture_files() -> List[Path]:
    """Single-file fixtures: every program outside `projects/`."""
    return sorted(p for p in FIXTURES.rglob("*.py")
                  if not p.name.endswith(".fixed.py") and PROJECTS not in p.parents)


def project_folders() -> List[Path]:
    """Multi-file fixtures: each folder in `projects/` is checked as one project."""
    return sorted(p for p in PROJECTS.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))) if PROJECTS.is_dir() else []
