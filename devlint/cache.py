"""Results cached by content: a file whose bytes, path, selected rules and
devlint version are unchanged is not analysed again.

The cache lives in `.devlint_cache/<version>-<fingerprint of devlint's own
sources>/` beside the configuration (or in the current directory). It is an optimisation only: any problem reading or
writing it is ignored and the file is simply analysed.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from typing import FrozenSet, List, Optional, Tuple

from . import __version__
from .diagnostics import Diagnostic

CACHE_DIRECTORY = ".devlint_cache"
_TAG = "Signature: 8a477f597d28d172789f06886806bc55\n# devlint's cache; see https://bford.info/cachedir/\n"


def _code_fingerprint() -> str:
    """devlint's own version and sources: a changed analysis must not reuse old results."""
    digest = hashlib.sha256(__version__.encode())
    package = os.path.dirname(os.path.abspath(__file__))
    for folder, _, names in sorted(os.walk(package)):
        for name in sorted(n for n in names if n.endswith(".py")):
            stat = os.stat(os.path.join(folder, name))
            digest.update(f"{name}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return digest.hexdigest()[:16]


def prepare(root: str) -> Optional[str]:
    """Create the cache folder (tagged, git-ignored); None when that is impossible."""
    directory = os.path.join(root, CACHE_DIRECTORY, f"{__version__}-{_code_fingerprint()}")
    try:
        os.makedirs(directory, exist_ok=True)
        top = os.path.join(root, CACHE_DIRECTORY)
        for name, content in (("CACHEDIR.TAG", _TAG), (".gitignore", "*\n")):
            marker = os.path.join(top, name)
            if not os.path.exists(marker):
                with open(marker, "w", encoding="utf-8") as handle:
                    handle.write(content)
    except OSError:
        return None
    return directory


def key(data: bytes, path: str, enabled: FrozenSet[str], project: str = "") -> str:
    """The entry for a file's content, path and rules, and (phase 2) what its imports resolve to."""
    digest = hashlib.sha256()
    for part in (path, ",".join(sorted(enabled)), project):
        digest.update(part.encode("utf-8", "surrogateescape") + b"\0")
    digest.update(data)
    return digest.hexdigest()


def load(directory: str, entry: str) -> Optional[Tuple[List[Diagnostic], Optional[dict]]]:
    """Diagnostics and the project summary of a cached file, or None."""
    try:
        with open(os.path.join(directory, entry + ".json"), encoding="utf-8") as handle:
            stored = json.load(handle)
        return [Diagnostic(**item) for item in stored["diagnostics"]], stored["summary"]
    except (OSError, ValueError, TypeError, KeyError):
        return None


def store(directory: str, entry: str, diagnostics: List[Diagnostic], summary: Optional[dict]) -> None:
    try:
        handle, temporary = tempfile.mkstemp(dir=directory, suffix=".tmp")
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            json.dump({"diagnostics": [d.to_json() for d in diagnostics], "summary": summary}, stream)
        os.replace(temporary, os.path.join(directory, entry + ".json"))
    except OSError:
        pass
