"""DEV0xx: the engine itself. A file that cannot be read or analysed is reported, and the run goes on."""
from __future__ import annotations

from .base import WARNING, Rule


class SyntaxErrorRule(Rule):
    code = "DEV001"
    name = "syntax-error"
    summary = "The file is not valid Python, so it was not analysed."
    why = """
devlint reads code with a real Python parser. A file that does not parse
cannot be analysed; it is reported with the parser's message and position,
and the other files are still checked.
"""
    example = """
def train(model:
    ...
"""
    use_instead = """
def train(model):
    ...
"""


class UnreadableFileRule(Rule):
    code = "DEV002"
    name = "unreadable-file"
    summary = "The file could not be read or decoded as Python source."
    why = """
A file that cannot be opened, is binary (contains NUL bytes), or is not valid
in its declared encoding (UTF-8 unless a PEP 263 coding line says otherwise)
cannot be analysed. It is reported and the run goes on.
"""
    example = """
# -*- coding: latin-1 -*-   (but the file is really UTF-16)
"""
    use_instead = """
# Save the file as UTF-8 (or declare its real encoding).
"""


class AnalysisLimitRule(Rule):
    code = "DEV003"
    name = "analysis-limit"
    severity = WARNING
    summary = "The file is too deeply nested to analyse; it was skipped."
    why = """
Extremely deep nesting (hundreds of nested parentheses or operators, usually
in generated code) exceeds the analyser's recursion budget. devlint reports
the file instead of crashing and checks the others.
"""
    example = """
x = ((((((((((((((((((((...))))))))))))))))))))   # a thousand levels deep
"""
    use_instead = """
# Split generated expressions, or exclude generated files with `exclude`.
"""


ENGINE_RULES = (SyntaxErrorRule, UnreadableFileRule, AnalysisLimitRule)
