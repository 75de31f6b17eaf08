"""Applying fixes to source text: positions to offsets, overlaps, validation.

Fixes are taken in the order of their diagnostics (line, column, code); a fix
that touches text another accepted fix already changes waits for the next
pass.  Identical edits (the same `import torch` wanted by two fixes) are
shared.  The result must still parse, or the fixes are tried one by one and
the ones that break it are dropped.
"""
from __future__ import annotations

import ast
import re
import warnings
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

import libcst as cst

from .model import Fix

_NEWLINE = re.compile(r"\r\n|\r|\n")
Span = Tuple[int, int, str]  # start offset, end offset, new content


def line_starts(text: str) -> List[int]:
    """Offset of each line's first character; lines end as libcst counts them."""
    return [0] + [match.end() for match in _NEWLINE.finditer(text)]


def lines(text: str) -> List[str]:
    starts = line_starts(text)
    return [text[start:end] for start, end in zip(starts, starts[1:] + [len(text)]) if start < len(text)]


def to_offset(starts: List[int], text: str, line: int, column: int) -> Optional[int]:
    if line == len(starts) + 1 and column == 0:
        return len(text)  # just past a last line without a newline
    if not 1 <= line <= len(starts):
        return None
    offset = starts[line - 1] + column
    end = starts[line] if line < len(starts) else len(text)
    return offset if offset <= end else None


@dataclass(frozen=True)
class Candidate:
    """A fix with its edits as offsets, ready to apply."""
    key: object          # what the caller uses to know which fix this was
    fix: Fix
    spans: Tuple[Span, ...]


def resolve(text: str, keyed_fixes: Sequence[Tuple[object, Fix]]) -> Tuple[List[Candidate], List[object]]:
    """Fixes whose positions exist in `text`; the keys of those that do not."""
    starts = line_starts(text)
    ready, invalid = [], []
    for key, fix in keyed_fixes:
        spans = []
        for edit in fix.edits:
            start = to_offset(starts, text, edit.line, edit.column)
            end = to_offset(starts, text, edit.end_line, edit.end_column)
            if start is None or end is None or end < start:
                break
            spans.append((start, end, edit.content))
        else:
            if spans:
                ready.append(Candidate(key, fix, tuple(spans)))
                continue
        invalid.append(key)
    return ready, invalid


def _conflict(a: Span, b: Span) -> bool:
    if a == b:
        return False  # the same edit, wanted twice: made once
    return a[0] <= b[1] and b[0] <= a[1]


def choose(candidates: Sequence[Candidate]) -> List[Candidate]:
    """The fixes of one pass: in order, each one that overlaps none already taken."""
    taken: List[Candidate] = []
    spans: List[Span] = []
    for candidate in candidates:
        if any(_conflict(new, old) for new in candidate.spans for old in spans):
            continue
        own = set(candidate.spans)
        if len(own) != len(candidate.spans) or any(_conflict(a, b) for a in own for b in own if a is not b):
            continue  # a fix whose own edits overlap is malformed
        taken.append(candidate)
        spans.extend(candidate.spans)
    return taken


def apply_spans(text: str, candidates: Sequence[Candidate]) -> str:
    unique = sorted({span for candidate in candidates for span in candidate.spans}, key=lambda s: (s[0], s[1]))
    pieces, cursor = [], 0
    for start, end, content in unique:
        pieces.append(text[cursor:start])
        pieces.append(content)
        cursor = end
    pieces.append(text[cursor:])
    return "".join(pieces)


def parses(text: str, strict: bool) -> bool:
    """libcst can read it, and so can Python when it could read the original."""
    try:
        cst.parse_module(text)
    except Exception:  # noqa: BLE001 - any parser failure means "does not parse"
        return False
    return python_parses(text) if strict else True


def python_parses(text: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def apply_pass(text: str, candidates: Sequence[Candidate]) -> Tuple[str, List[Candidate], List[Candidate]]:
    """Apply the non-overlapping fixes; returns the new text, the fixes applied and the
    fixes dropped because their result does not parse."""
    chosen = choose(candidates)
    if not chosen:
        return text, [], []
    strict = python_parses(text)
    result = apply_spans(text, chosen)
    if parses(result, strict):
        return result, chosen, []
    applied, dropped = [], []
    for candidate in chosen:  # find the culprits: keep each fix that parses on top of the others kept
        attempt = apply_spans(text, applied + [candidate])
        (applied if parses(attempt, strict) else dropped).append(candidate)
    return (apply_spans(text, applied) if applied else text), applied, dropped
