"""Fixing one file's content: analyse, apply, analyse again, until nothing changes.

Everything happens in memory; writing is the caller's business.  The text is
re-encoded exactly as it was read (encoding, BOM), and line endings are
untouched because edits replace only the characters they cover.
"""
from __future__ import annotations

import io
import tokenize
from dataclasses import dataclass, field
from typing import Callable, List, Optional, Set, Tuple

from ..diagnostics import Diagnostic
from ..engine import decode
from ..rules import RULES_BY_CODE
from .apply import apply_pass, resolve
from .model import SAFE, Fix

#: Like ruff: enough passes for fixes that enable other fixes, never an endless loop.
MAX_PASSES = 10

Analyse = Callable[[str], List[Diagnostic]]


@dataclass
class FileFix:
    path: str
    original: bytes
    fixed: Optional[bytes] = None                                 # None: nothing to change
    found: List[Diagnostic] = field(default_factory=list)         # before fixing
    applied: List[Diagnostic] = field(default_factory=list)       # as found, before their fix
    remaining: List[Diagnostic] = field(default_factory=list)     # in the fixed content
    problems: List[str] = field(default_factory=list)             # fixes dropped, and why


def applicable(diagnostic: Diagnostic, unsafe: bool) -> bool:
    return diagnostic.fix is not None and (unsafe or diagnostic.fix.get("applicability") == SAFE)


def _treats_symptom(code: str) -> bool:
    rule = RULES_BY_CODE.get(code)
    return rule is not None and rule.fix_after_others


def source_encoding(data: bytes) -> Optional[str]:
    try:
        return tokenize.detect_encoding(io.BytesIO(data).readline)[0]
    except SyntaxError:
        return None


def fix_text(text: str, diagnostics: List[Diagnostic], analyse: Analyse,
             unsafe: bool) -> Tuple[str, List[Diagnostic], List[Diagnostic], List[str]]:
    """(new text, diagnostics fixed, diagnostics remaining, problems)."""
    applied_all: List[Diagnostic] = []
    problems: List[str] = []
    given_up: Set[Tuple[str, str]] = set()
    for passes in range(MAX_PASSES + 1):
        fixable = [(d, Fix.from_json(d.fix)) for d in diagnostics
                   if applicable(d, unsafe) and (d.code, d.fix["message"]) not in given_up]
        if not fixable:
            break
        if passes == MAX_PASSES:
            problems.append(f"fixes did not settle after {MAX_PASSES} passes; the last result is kept")
            break
        causes = [(d, fix) for d, fix in fixable if not _treats_symptom(d.code)]
        candidates, unplaced = resolve(text, causes or fixable)
        for diagnostic in unplaced:
            given_up.add((diagnostic.code, diagnostic.fix["message"]))
            problems.append(f"{diagnostic.line}: {diagnostic.code} fix has edits outside the file; dropped")
        new_text, applied, dropped = apply_pass(text, candidates)
        for candidate in dropped:
            diagnostic = candidate.key
            given_up.add((diagnostic.code, candidate.fix.message))
            problems.append(f"{diagnostic.line}: {diagnostic.code} fix would leave code that does not parse; dropped")
        if not applied:
            break
        applied_all.extend(candidate.key for candidate in applied)
        text = new_text
        diagnostics = analyse(text)
    return text, applied_all, diagnostics, problems


def fix_bytes(data: bytes, path: str, diagnostics: List[Diagnostic], analyse: Analyse, unsafe: bool) -> FileFix:
    """Fix one file's content in memory, given its diagnostics and how to analyse new text."""
    result = FileFix(path, data, found=diagnostics, remaining=diagnostics)
    if not any(applicable(d, unsafe) for d in diagnostics):
        return result
    text, _ = decode(data)
    encoding = source_encoding(data)
    if text is None or encoding is None or text.encode(encoding) != data:
        result.problems.append("the file cannot be re-encoded exactly as it was read; not fixed")
        return result
    new_text, applied, remaining, problems = fix_text(text, diagnostics, analyse, unsafe)
    result.applied, result.remaining, result.problems = applied, remaining, problems
    if new_text != text:
        try:
            result.fixed = new_text.encode(encoding)
        except UnicodeEncodeError:
            result.problems.append(f"the fixed text cannot be written as {encoding}; not fixed")
            result.applied, result.remaining = [], diagnostics
    return result

