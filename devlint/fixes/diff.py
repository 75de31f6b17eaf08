"""`--diff`: what `--fix` would change, as a unified diff."""
from __future__ import annotations

import difflib
from typing import List, Tuple

from .apply import lines
from .fixer import FileFix


def diff_report(results: List[FileFix]) -> Tuple[str, str]:
    """The diffs of every file `--fix` would change, and a one-line summary."""
    changed = [result for result in results if result.fixed is not None]
    if not changed:
        return "", "No fixes to apply."
    count = sum(len(result.applied) for result in changed)
    noun = "problem" if count == 1 else "problems"
    files = "file" if len(changed) == 1 else "files"
    return "".join(unified_diff(result) for result in changed), f"Would fix {count} {noun} in {len(changed)} {files}."


def unified_diff(result: FileFix) -> str:
    if result.fixed is None:
        return ""
    before = lines(result.original.decode("utf-8", "surrogateescape"))
    after = lines(result.fixed.decode("utf-8", "surrogateescape"))
    diff = difflib.unified_diff(before, after, result.path, result.path)
    text = "".join(line if line.endswith(("\n", "\r")) else line + "\n\\ No newline at end of file\n" for line in diff)
    return text
