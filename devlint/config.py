"""`[tool.devlint]` in pyproject.toml: finding it, reading it, checking it."""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on old Pythons only
    import tomli as tomllib

FALLBACK_STYLES = ("is_available", "accelerator")
DEFAULT_EXCLUDES = (
    ".git", ".hg", ".svn", ".bzr", ".venv", "venv", ".tox", ".nox", ".eggs", "*.egg-info",
    "build", "dist", "node_modules", "__pycache__", ".mypy_cache", ".pytest_cache",
    ".ruff_cache", ".devlint_cache", "site-packages", "__pypackages__", ".ipynb_checkpoints",
)
_LIST_KEYS = ("select", "ignore", "extend-select", "exclude", "extend-exclude")
_KNOWN_KEYS = frozenset(_LIST_KEYS + ("per-file-ignores", "fallback-style"))


class ConfigError(Exception):
    """A configuration or usage problem: reported in one line, exit status 2."""


@dataclass(frozen=True)
class Settings:
    select: Optional[List[str]] = None
    ignore: List[str] = field(default_factory=list)
    extend_select: List[str] = field(default_factory=list)
    per_file_ignores: Dict[str, List[str]] = field(default_factory=dict)
    exclude: List[str] = field(default_factory=lambda: list(DEFAULT_EXCLUDES))
    fallback_style: str = "is_available"
    root: Path = field(default_factory=Path.cwd)
    config_path: Optional[Path] = None


def find_config(paths: Sequence[str]) -> Optional[Path]:
    """The nearest pyproject.toml with a [tool.devlint] table above the first path."""
    start = Path(paths[0]) if paths and paths[0] != "-" else Path.cwd()
    start = start.resolve()
    if not start.is_dir():
        start = start.parent
    for directory in (start, *start.parents):
        candidate = directory / "pyproject.toml"
        if candidate.is_file() and "devlint" in _read_toml(candidate).get("tool", {}):
            return candidate
    return None


def load_settings(config_path: Optional[Path]) -> Settings:
    if config_path is None:
        return Settings()
    data = _read_toml(config_path)
    table = data.get("tool", {}).get("devlint") if config_path.name == "pyproject.toml" else data
    if table is None:
        table = data.get("tool", {}).get("devlint", data)
    if not isinstance(table, dict):
        raise ConfigError(f"{config_path}: [tool.devlint] must be a table")
    unknown = sorted(set(table) - _KNOWN_KEYS)
    if unknown:
        raise ConfigError(f"{config_path}: unknown setting {unknown[0]!r} in [tool.devlint] "
                          f"(known: {', '.join(sorted(_KNOWN_KEYS))})")
    values = {key: _string_list(config_path, key, table[key]) for key in _LIST_KEYS if key in table}
    per_file = table.get("per-file-ignores", {})
    if not isinstance(per_file, dict):
        raise ConfigError(f"{config_path}: per-file-ignores must be a table of pattern = [codes]")
    per_file_ignores = {str(pattern): _string_list(config_path, f"per-file-ignores.{pattern}", codes)
                        for pattern, codes in per_file.items()}
    style = table.get("fallback-style", "is_available")
    if style not in FALLBACK_STYLES:
        raise ConfigError(f"{config_path}: fallback-style must be one of {', '.join(FALLBACK_STYLES)}, not {style!r}")
    exclude = list(DEFAULT_EXCLUDES) if "exclude" not in values else values["exclude"]
    exclude += values.get("extend-exclude", [])
    return Settings(
        select=values.get("select"),
        ignore=values.get("ignore", []),
        extend_select=values.get("extend-select", []),
        per_file_ignores=per_file_ignores,
        exclude=exclude,
        fallback_style=style,
        root=config_path.parent.resolve(),
        config_path=config_path,
    )


def _read_toml(path: Path) -> dict:
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except OSError as error:
        raise ConfigError(f"cannot read {path}: {error.strerror or error}") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: invalid TOML: {error}") from None


def _string_list(path: Path, key: str, value) -> List[str]:
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{path}: {key} must be a list of strings")
    return list(value)
