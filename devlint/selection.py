"""Which rules run: `select`, `extend-select`, `ignore` and per-file ignores."""
from __future__ import annotations

import fnmatch
from pathlib import PurePath
from typing import FrozenSet, Iterable, List

from .config import ConfigError, Settings
from .rules import ALL_RULES, RULES_BY_NAME


def expand(selectors: Iterable[str]) -> FrozenSet[str]:
    """Codes named by selectors: `ALL`, a code, a code prefix (`DEV1`), or a rule name."""
    codes = set()
    for raw in selectors:
        selector = raw.strip()
        if not selector:
            continue
        if selector.upper() == "ALL":
            codes.update(rule.code for rule in ALL_RULES)
            continue
        if selector in RULES_BY_NAME:
            codes.add(RULES_BY_NAME[selector].code)
            continue
        matched = {rule.code for rule in ALL_RULES if rule.code.startswith(selector.upper())}
        if not matched:
            raise ConfigError(f"unknown rule selector {selector!r} (see `devlint rules`)")
        codes.update(matched)
    return frozenset(codes)


def enabled_codes(settings: Settings) -> FrozenSet[str]:
    if settings.select is None:
        base = frozenset(rule.code for rule in ALL_RULES if rule.default_enabled)
    else:
        base = expand(settings.select)
    return (base | expand(settings.extend_select)) - expand(settings.ignore)


def ignored_for(path: str, settings: Settings) -> FrozenSet[str]:
    """Codes ignored for one file by `per-file-ignores`."""
    if not settings.per_file_ignores:
        return frozenset()
    candidates = _relative_forms(path, settings)
    ignored: set = set()
    for pattern, codes in settings.per_file_ignores.items():
        if any(fnmatch.fnmatch(candidate, pattern) for candidate in candidates):
            ignored |= expand(codes)
    return frozenset(ignored)


def _relative_forms(path: str, settings: Settings) -> List[str]:
    pure = PurePath(path)
    forms = [pure.as_posix(), pure.name]
    try:
        forms.append(PurePath(pure).relative_to(settings.root).as_posix())
    except ValueError:
        pass
    return forms
