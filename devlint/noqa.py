"""Suppression comments: `# noqa`, `# noqa: DEV101,DEV102`, and `# devlint: noqa` for a whole file."""
from __future__ import annotations

import re
from typing import Dict, FrozenSet, List, Optional

_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)
_FILE_NOQA = re.compile(r"^\s*#\s*devlint\s*:\s*noqa\s*$", re.IGNORECASE | re.MULTILINE)
ALL = frozenset({"*"})


def file_is_exempt(text: str) -> bool:
    """`# devlint: noqa` on a line of its own exempts the file."""
    return bool(_FILE_NOQA.search(text))


def line_suppressions(lines: List[str]) -> Dict[int, FrozenSet[str]]:
    """1-based line number -> codes suppressed there (`{"*"}` for all)."""
    found: Dict[int, FrozenSet[str]] = {}
    for number, line in enumerate(lines, start=1):
        if "#" not in line:
            continue
        match = _NOQA.search(line)
        if match is None:
            continue
        codes = match.group("codes")
        found[number] = ALL if not codes else frozenset(c.upper() for c in re.split(r"[\s,]+", codes) if c)
    return found


def is_suppressed(code: str, line: int, suppressions: Dict[int, FrozenSet[str]]) -> bool:
    codes: Optional[FrozenSet[str]] = suppressions.get(line)
    return codes is not None and (codes is ALL or "*" in codes or code in codes)
