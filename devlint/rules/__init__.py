"""The rule registry: every rule, by code, in catalogue order."""
from __future__ import annotations

from typing import Dict, Tuple, Type

from .base import ERROR, INFO, WARNING, Finding, Rule
from .engine_rules import ENGINE_RULES, AnalysisLimitRule, SyntaxErrorRule, UnreadableFileRule
from .hot_path import HOT_PATH_RULES
from .parallel import PARALLEL_RULES
from .placement import PLACEMENT_RULES
from .portability import PORTABILITY_RULES

ALL_RULES: Tuple[Type[Rule], ...] = ENGINE_RULES + PLACEMENT_RULES + PARALLEL_RULES + PORTABILITY_RULES + HOT_PATH_RULES
RULES_BY_CODE: Dict[str, Type[Rule]] = {rule.code: rule for rule in ALL_RULES}
RULES_BY_NAME: Dict[str, Type[Rule]] = {rule.name: rule for rule in ALL_RULES}

__all__ = [
    "ALL_RULES", "RULES_BY_CODE", "RULES_BY_NAME", "Rule", "Finding", "ERROR", "WARNING", "INFO",
    "SyntaxErrorRule", "UnreadableFileRule", "AnalysisLimitRule",
]
