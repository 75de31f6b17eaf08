"""Which files a run checks: the paths given, directories walked, excludes applied."""
from __future__ import annotations

import fnmatch
import os
from pathlib import PurePath
from typing import List, Sequence

from .config import ConfigError, Settings

PYTHON_SUFFIXES = (".py", ".pyi")


def collect_files(paths: Sequence[str], settings: Settings, force_exclude: bool = False) -> List[str]:
    """Files to check, in a stable order. A file named explicitly is checked even when an
    exclude pattern matches it, unless `force_exclude` (editors and pre-commit name every file)."""
    files: List[str] = []
    for path in paths:
        if os.path.isfile(path):
            if not (force_exclude and is_excluded(path, settings)):
                files.append(path)
        elif os.path.isdir(path):
            files.extend(_walk(path, settings))
        else:
            raise ConfigError(f"path not found: {path}")
    seen = set()
    unique = []
    for file in files:
        key = os.path.normpath(file)
        if key not in seen:
            seen.add(key)
            unique.append(file)
    return unique


def _walk(top: str, settings: Settings) -> List[str]:
    found = []
    for directory, subdirectories, filenames in os.walk(top):
        subdirectories[:] = sorted(d for d in subdirectories if not is_excluded(os.path.join(directory, d), settings))
        for name in sorted(filenames):
            path = os.path.join(directory, name)
            if name.endswith(PYTHON_SUFFIXES) and not is_excluded(path, settings):
                found.append(os.path.normpath(path))
    return found


def is_excluded(path: str, settings: Settings) -> bool:
    pure = PurePath(path)
    forms = [pure.name, pure.as_posix()]
    try:
        forms.append(PurePath(os.path.abspath(path)).relative_to(settings.root).as_posix())
    except ValueError:
        pass
    return any(fnmatch.fnmatch(form, pattern) or fnmatch.fnmatch(form, pattern.rstrip("/") + "/*")
               for pattern in settings.exclude for form in forms)
