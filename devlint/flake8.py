"""devlint inside flake8: `flake8` reports devlint's DEV codes, found by the same engine.

A thin adapter: flake8 hands over one file's lines, `devlint.engine.check_text`
analyses them, and each diagnostic is yielded unchanged (devlint's 0-based column;
flake8 adds 1, so the columns printed are those of `devlint`'s text output).

What is read where:

* flake8 decides what is shown, as for any plugin: `select`, `extend-select`,
  `ignore`, `extend-ignore`, `per-file-ignores`, `# noqa` / `# noqa: DEV101`,
  `--disable-noqa`, `# flake8: noqa`, and which files are checked (`exclude`,
  `filename`). devlint's own `# noqa` handling is off here, so flake8's applies
  (flake8 spells it `# noqa` with one space, and also takes prefixes: `# noqa: DEV1`).
* DEV207 and DEV405, off by default in devlint, are on flake8's default ignore
  list: `--extend-select DEV207` turns one on. As with any default-ignored code,
  flake8 drops that list when `ignore` is given or when `select`/`extend-select`
  names the prefix `DEV`; use `extend-ignore` to keep it.
* `[tool.devlint]` in the pyproject.toml nearest the file (found as `devlint FILE`
  finds it, cached per directory) decides which rules run at all: `select`,
  `extend-select`, `ignore`, `per-file-ignores`; and `fallback-style`. flake8's
  options filter on top. Its `exclude` is not read (flake8's decides), and
  `--isolated` does not skip it (that flag is about flake8's own config files).
* The `[tool.devlint]` nearest the working directory also decides which off-by-default
  rules go on flake8's default ignore list (flake8 sets it once, before any file):
  one it enables is reported by plain `flake8` too, as by `devlint`.
* `# devlint: noqa` on a line of its own still exempts the whole file.

Not the same as `devlint`:

* Files are checked one by one: the project index (what a module learns about the
  modules it imports, e.g. a model built in another file) is not used, so findings
  that need it are reported by `devlint` only.
* flake8 runs no plugin on a file Python cannot parse: it reports E999 there, not
  DEV001. (A plugin must accept `tree` to run once per file; this one ignores it.)

Nothing here raises into flake8: the engine turns problems with a file into DEV0xx
diagnostics, and a broken `[tool.devlint]` is reported on stderr (once per flake8
process) and replaced by the defaults.
"""
from __future__ import annotations

import functools
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import FrozenSet, Iterator, List, Sequence, Tuple

from . import __version__
from .config import ConfigError, Settings, find_config, load_settings
from .engine import check_text, raise_recursion_limit
from .rules import ALL_RULES
from .selection import enabled_codes, ignored_for

#: Rules devlint runs only when asked to.
OFF_BY_DEFAULT = frozenset(rule.code for rule in ALL_RULES if not rule.default_enabled)
_warned: set = set()


class Plugin:
    name = "devlint"
    version = __version__

    def __init__(self, tree, lines: Sequence[str], filename: str) -> None:
        # `tree` only makes flake8 call us once per file; devlint parses `lines` itself (libcst).
        self.lines = lines
        self.filename = filename

    @classmethod
    def add_options(cls, option_manager) -> None:
        option_manager.extend_default_ignore(default_ignored())

    def run(self) -> Iterator[Tuple[int, int, str, type]]:
        settings, codes = settings_for(str(Path(self.filename).resolve().parent))
        try:
            # The path as given, as `devlint` matches it; the absolute one adds the form relative
            # to the config's folder, so "pkg/*.py" matches however flake8 was given the file.
            codes -= ignored_for(os.path.normpath(self.filename), settings)
            codes -= ignored_for(os.path.abspath(self.filename), settings)
        except ConfigError as error:  # an unknown code in per-file-ignores
            _warn_once(str(error))
        raise_recursion_limit()  # as `devlint` does, so deep files get the same verdict
        text = "".join(self.lines)
        for diagnostic in check_text(text, self.filename, codes, settings.fallback_style, suppress=False):
            yield diagnostic.line, diagnostic.column, f"{diagnostic.code} {diagnostic.message}", type(self)


def default_ignored() -> List[str]:
    """The off-by-default rules, less those the working directory's [tool.devlint] turns on."""
    settings, _ = settings_for(os.getcwd())
    return sorted(OFF_BY_DEFAULT - enabled_codes(settings))


@functools.lru_cache(maxsize=None)
def settings_for(directory: str) -> Tuple[Settings, FrozenSet[str]]:
    """The [tool.devlint] settings for files in `directory`, and the rules they let run."""
    try:
        settings = load_settings(find_config([directory]))
        return settings, rules_to_run(settings)
    except ConfigError as error:
        _warn_once(str(error))
        return Settings(), rules_to_run(Settings())


def rules_to_run(settings: Settings) -> FrozenSet[str]:
    """devlint's selection, except that with no `select` the off-by-default rules run too:
    flake8's default ignore list hides them, and its `--extend-select` can then show them."""
    select = settings.select if settings.select is not None else ["ALL"]
    return enabled_codes(replace(settings, select=select))


def _warn_once(message: str) -> None:
    # flake8 has no channel for a plugin's configuration problems; stderr is what users see.
    if message not in _warned:
        _warned.add(message)
        sys.stderr.write(f"devlint (flake8 plugin): {message}; using the default settings\n")
