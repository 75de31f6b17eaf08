"""One file through the pipeline: bytes -> text -> tree -> facts -> diagnostics.

Every failure on the way becomes a DEV0xx diagnostic for that file; nothing
here raises for bad input.
"""
from __future__ import annotations

import ast
import io
import os
import re
import sys
import tokenize
import warnings
from typing import FrozenSet, List, Optional, Tuple

import libcst as cst

from . import noqa
from .analysis.program import Program
from .limits import overlong_expression
from .analysis.project import ProjectPlace
from .analysis.project import Exports, summarise, summarise_imports
from .diagnostics import Diagnostic
from .fixes.builder import UnreliablePosition
from .rules import ALL_RULES, AnalysisLimitRule, Rule, SyntaxErrorRule, UnreadableFileRule
from .rules.context import RuleContext

#: A file without any of these words cannot hold a device bug: it is not parsed. (Tensor methods
#: count: a helper that never imports torch may still get tensors from the rest of the project.)
_RELEVANT = re.compile(r"torch|cuda|device|transformers|\bmps\b|\.(?:backward|item|cpu|numpy|to)\(")
_LIBCST_POSITION = re.compile(r"error at (\d+):(\d+): ")
RECURSION_LIMIT = 12000
DEFAULT_FALLBACK = "is_available"


def check_bytes(data: bytes, path: str, enabled: FrozenSet[str], place: Optional[ProjectPlace] = None,
                fallback_style: str = DEFAULT_FALLBACK) -> Tuple[List[Diagnostic], Optional[Exports]]:
    """All diagnostics for one file's content (filtered by `enabled` and `# noqa`), and its
    summary for the project index when `place` puts it in a project."""
    text, problem = decode(data)
    if text is None:
        line, message = problem
        return _engine(UnreadableFileRule, path, line, 0, message, enabled), None
    return analyse_text(text, path, enabled, place, fallback_style)


def check_text(text: str, path: str, enabled: FrozenSet[str], fallback_style: str = DEFAULT_FALLBACK,
               suppress: bool = True) -> List[Diagnostic]:
    """One file on its own (stdin, tests, the flake8 plugin)."""
    return analyse_text(text, path, enabled, None, fallback_style, suppress)[0]


def analyse_text(text: str, path: str, enabled: FrozenSet[str], place: Optional[ProjectPlace],
                 fallback_style: str = DEFAULT_FALLBACK, suppress: bool = True,
                 ) -> Tuple[List[Diagnostic], Optional[Exports]]:
    """`suppress=False` keeps findings on `# noqa` lines, for a host (flake8) that applies its own."""
    if not _RELEVANT.search(text) or noqa.file_is_exempt(text):
        return [], _reexports(text, place)
    overlong = overlong_expression(text)
    if overlong is not None:
        line, count, what = overlong
        return _engine(AnalysisLimitRule, path, line, 0,
                       f"an expression with about {count} {what} is too long to analyse; file skipped", enabled), None
    try:
        module = cst.parse_module(text)
    except RecursionError:
        return _engine(AnalysisLimitRule, path, 1, 0, "too deeply nested to parse; file skipped", enabled), None
    except Exception as error:  # noqa: BLE001 - libcst raises several kinds; all mean "does not parse"
        line, column, message = syntax_error(text, error)
        return _engine(SyntaxErrorRule, path, line, column, message, enabled), None
    rules = [rule() for rule in ALL_RULES if rule.code in enabled and rule.check is not Rule.check]
    summary = None
    try:
        # (a file on its own still has a name: `test_*.py` says its classes serve its tests)
        program = Program(module, text, place if place is not None else ProjectPlace(module=_stem(path)))
        facts = program.run()
        if place is not None and place.module:
            summary = summarise(program, place.root, place.module, place.is_package)
        if not facts:
            return [], summary
        context = RuleContext(module, fallback_style, text)
        findings = [(rule, finding) for rule in rules for finding in rule.check(facts, context)]
        diagnostics = [_diagnostic(rule, finding, path, context, facts.chains.get(id(finding.node)))
                       for rule, finding in findings]
    except RecursionError:
        return _engine(AnalysisLimitRule, path, 1, 0, "too deeply nested to analyse; file skipped", enabled), None
    except Exception as error:  # noqa: BLE001 - never a traceback for the user's file
        if os.environ.get("DEVLINT_DEBUG"):
            raise
        return _engine(AnalysisLimitRule, path, 1, 0,
                       f"internal error while analysing ({type(error).__name__}: {error}); please report it", enabled), None
    if suppress:
        diagnostics = _suppress(diagnostics, text)
    return sorted(diagnostics, key=Diagnostic.sort_key), summary


def _reexports(text: str, place: Optional[ProjectPlace]) -> Optional[Exports]:
    """A package's `__init__.py` matters to the project for what it re-exports."""
    if place is None or not place.is_package or "import" not in text:
        return None
    try:
        return summarise_imports(cst.parse_module(text), place.root, place.module, place.is_package)
    except Exception:  # noqa: BLE001 - a broken __init__.py simply re-exports nothing we know
        return None


def _stem(path: str) -> str:
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    return name[:-3] if name.endswith(".py") else name


def decode(data: bytes) -> Tuple[Optional[str], Tuple[int, str]]:
    """Source bytes to text as Python would read them (BOM, PEP 263 cookie)."""
    if b"\0" in data:
        return None, (1, "binary file (contains NUL bytes); not analysed")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as error:
        return None, (getattr(error, "lineno", None) or 1, f"cannot decode: {error.msg}")
    try:
        return data.decode(encoding), (0, "")
    except (UnicodeDecodeError, LookupError) as error:
        start = getattr(error, "start", 0)
        line = data.count(b"\n", 0, start) + 1
        return None, (line, f"cannot decode as {encoding}: {error.reason if hasattr(error, 'reason') else error}")


def syntax_error(text: str, error: Exception) -> Tuple[int, int, str]:
    """Position and a readable message; Python's own parser words it best."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(text)
    except SyntaxError as python_error:
        line = python_error.lineno or 1
        column = max((python_error.offset or 1) - 1, 0)
        return line, column, f"syntax error: {python_error.msg}"
    except (RecursionError, MemoryError, ValueError):
        pass
    match = _LIBCST_POSITION.search(str(error))
    if match:
        detail = str(error).split(match.group(0), 1)[-1].splitlines()[0]
        line_count = text.count("\n") + 1
        return min(int(match.group(1)), line_count), int(match.group(2)), f"cannot parse: {detail}"
    return 1, 0, f"cannot parse: {type(error).__name__}"


def _diagnostic(rule, finding, path: str, context: RuleContext, chain=None) -> Diagnostic:
    code_range = context.range_of(finding.node)
    message = finding.message + context.call_chain(chain)
    return Diagnostic(rule.code, rule.name, rule.severity, message, path,
                      code_range.start.line, code_range.start.column, code_range.end.line, code_range.end.column,
                      _fix_of(finding))


def _fix_of(finding) -> Optional[dict]:
    """The finding's fix in JSON form; a fix that cannot be built costs the fix, not the finding."""
    if finding.fix is None:
        return None
    try:
        fix = finding.fix()
    except UnreliablePosition:
        return None
    except Exception:  # noqa: BLE001 - a fix builder's slip must never hide the diagnostic
        if os.environ.get("DEVLINT_DEBUG"):
            raise
        return None
    return fix.to_json() if fix is not None else None


def _engine(rule, path: str, line: int, column: int, message: str, enabled: FrozenSet[str]) -> List[Diagnostic]:
    if rule.code not in enabled:
        return []
    return [Diagnostic(rule.code, rule.name, rule.severity, message, path, line, column, line, column)]


def _suppress(diagnostics: List[Diagnostic], text: str) -> List[Diagnostic]:
    if not diagnostics:
        return diagnostics
    suppressions = noqa.line_suppressions(text.splitlines())
    return [d for d in diagnostics if not noqa.is_suppressed(d.code, d.line, suppressions)]


def raise_recursion_limit() -> None:
    if sys.getrecursionlimit() < RECURSION_LIMIT:
        sys.setrecursionlimit(RECURSION_LIMIT)
