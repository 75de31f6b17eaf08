"""`--diff`: what `--fix` would change, as a unified diff."""
from __future__ import annotations

import difflib

from .apply import lines
from .fixer import FileFix


def unified_diff(result: FileFix) -> str:
    if result.fixed is None:
        return ""
    before = lines(result.original.decode("utf-8", "surrogateescape"))
    after = lines(result.fixed.decode("utf-8", "surrogateescape"))
    diff = difflib.unified_diff(before, after, result.path, result.path)
    text = "".join(line if line.endswith(("\n", "\r")) else line + "\n\\ No newline at end of file\n" for line in diff)
    return text
