"""Each rule carries its documentation and inline snippets; the snippets are run here."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from devlint.rules import ALL_RULES
from fixture_support import expectations, mismatch_report

ANALYSIS_RULES = [rule for rule in ALL_RULES if not rule.code.startswith("DEV0")]


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.code)
def test_rule_metadata(rule):
    assert re.fullmatch(r"DEV\d{3}", rule.code)
    assert re.fullmatch(r"[a-z]+(-[a-z]+)+", rule.name)
    assert rule.severity in ("error", "warning", "info")
    for text in (rule.summary, rule.why, rule.example, rule.use_instead):
        assert text.strip()


def test_codes_and_names_are_unique():
    assert len({r.code for r in ALL_RULES}) == len({r.name for r in ALL_RULES}) == len(ALL_RULES)


@pytest.mark.parametrize("rule", ANALYSIS_RULES, ids=lambda r: r.code)
def test_inline_snippets(rule):
    assert rule.invalid and rule.valid
    for snippet in rule.invalid:
        assert (max(n for n, _ in expectations(snippet)), rule.code) in expectations(snippet)
        assert not mismatch_report(snippet, f"{rule.code}-invalid.py")
    for snippet in rule.valid:
        assert not expectations(snippet)
        assert not mismatch_report(snippet, f"{rule.code}-valid.py")


def test_readme_lists_every_rule_with_its_severity():
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    for rule in ALL_RULES:
        default = "yes" if rule.default_enabled else "no (opt-in)"
        assert f"| {rule.code} | {rule.name} | {rule.severity} | {default} |" in readme, rule.code


def test_readme_fixes_table_matches_the_rules():
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    for rule in ALL_RULES:
        row = f"| {rule.code} | {rule.name} | {rule.fix_summary} |"
        assert (row in readme) == rule.fixable, rule.code
        assert bool(rule.fix_summary) == rule.fixable, rule.code
    assert f"{sum(rule.fixable for rule in ALL_RULES)} rules have fixes:" in readme
