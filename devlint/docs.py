"""docs/rules.md, generated from the rules themselves (`devlint rules --output-format markdown`)."""
from __future__ import annotations

from .rules import ALL_RULES

_HEADER = """# devlint rules

Generated from the rules' own documentation by `devlint rules --output-format
markdown`; `devlint explain CODE` prints one section. Do not edit by hand: a
test compares this file with the generator.

| code | name | severity | on by default | fixable |
| --- | --- | --- | --- | --- |
"""


def rules_markdown() -> str:
    table = "".join(
        f"| [{rule.code}](#{rule.code.lower()}-{rule.name}) | {rule.name} | {rule.severity} | "
        f"{'yes' if rule.default_enabled else 'no'} | {'yes' if rule.fixable else 'no'} |\n" for rule in ALL_RULES)
    return _HEADER + table + "\n" + "\n".join(rule.documentation() for rule in ALL_RULES)
