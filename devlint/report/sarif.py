"""`--output-format sarif`: SARIF 2.1.0 for code-scanning dashboards.

One run, the tool's driver listing every rule with its documentation, and one
result per diagnostic with its location and, when it has one, its fix.
SARIF counts lines and columns from 1; devlint's columns are code points, so
the run says `columnKind: unicodeCodePoints`.
"""
from __future__ import annotations

import json
from pathlib import PurePath
from typing import Any, Dict, Sequence
from urllib.parse import quote

from .. import __version__
from ..diagnostics import Diagnostic
from ..rules import ALL_RULES

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVELS = {"error": "error", "warning": "warning", "info": "note"}


def format_sarif(diagnostics: Sequence[Diagnostic]) -> str:
    index = {rule.code: position for position, rule in enumerate(ALL_RULES)}
    run = {
        "tool": {"driver": {
            "name": "devlint",
            "version": __version__,
            "semanticVersion": __version__,
            "rules": [_rule(rule) for rule in ALL_RULES],
        }},
        "columnKind": "unicodeCodePoints",
        "results": [_result(d, index) for d in diagnostics],
    }
    return json.dumps({"$schema": SCHEMA, "version": "2.1.0", "runs": [run]}, indent=2, ensure_ascii=False) + "\n"


def _rule(rule) -> Dict[str, Any]:
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": " ".join(rule.why.split())},
        "help": {"text": rule.summary, "markdown": rule.documentation()},
        "defaultConfiguration": {"level": _LEVELS[rule.severity], "enabled": rule.default_enabled},
        "properties": {"fixable": rule.fixable},
    }


def _result(diagnostic: Diagnostic, index: Dict[str, int]) -> Dict[str, Any]:
    location = _artifact(diagnostic.path)
    result: Dict[str, Any] = {
        "ruleId": diagnostic.code,
        "level": _LEVELS.get(diagnostic.severity, "warning"),
        "message": {"text": diagnostic.message},
        "locations": [{"physicalLocation": {
            "artifactLocation": location,
            "region": _region(diagnostic.line, diagnostic.column, diagnostic.end_line, diagnostic.end_column),
        }}],
    }
    if diagnostic.code in index:
        result["ruleIndex"] = index[diagnostic.code]
    if diagnostic.fix is not None:
        result["fixes"] = [{
            "description": {"text": diagnostic.fix["message"]},
            "artifactChanges": [{"artifactLocation": location, "replacements": [
                {"deletedRegion": _region(e["line"], e["column"], e["end_line"], e["end_column"]),
                 "insertedContent": {"text": e["content"]}} for e in diagnostic.fix["edits"]]}],
        }]
        result.setdefault("properties", {})["fixApplicability"] = diagnostic.fix["applicability"]
    if diagnostic.trace is not None:
        result.setdefault("properties", {})["traceStatus"] = diagnostic.trace
    return result


def _region(line: int, column: int, end_line: int, end_column: int) -> Dict[str, int]:
    return {"startLine": line, "startColumn": column + 1, "endLine": end_line, "endColumn": end_column + 1}


def _artifact(path: str) -> Dict[str, str]:
    """A relative path stays relative (to where devlint ran); an absolute one becomes a file URI."""
    pure = PurePath(path)
    if pure.is_absolute():
        return {"uri": pure.as_uri()}
    return {"uri": "/".join(quote(part) for part in pure.parts), "uriBaseId": "%SRCROOT%"}
