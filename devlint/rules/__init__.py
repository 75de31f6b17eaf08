"""The rule registry: every rule, by code, in catalogue order."""
from __future__ import annotations

from typing import Dict, Tuple, Type

from .base import ERROR, INFO, WARNING, Finding, Rule
from .engine_rules import ENGINE_RULES, AnalysisLimitRule, SyntaxErrorRule, UnreadableFileRule
from .placement import PLACEMENT_RULES

ALL_RULES: Tuple[Type[Rule], ...] = ENGINE_RULES + PLACEMENT_RULES
RULES_BY_CODE: Dict[str, Type[Rule]] = {rule.code: rule for rule in ALL_RULES}
RULES_BY_NAME: Dict[str, Type[Rule]] = {rule.name: rule for rule in ALL_RULES}

__all__ = [
    "ALL_RULES", "RULES_BY_CODE", "RULES_BY_NAME", "Rule", "Finding", "ERROR", "WARNING", "INFO",
    "SyntaxErrorRule", "UnreadableFileRule", "AnalysisLimitRule",
]
