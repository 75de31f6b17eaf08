"""Writing a fixed file without ever losing the user's bytes.

The new content goes to a temporary file in the same directory, is flushed
to disk and takes the original's permission bits, and only then replaces
the original in one rename.  A file that is read-only, or that changed since
devlint read it, is left alone and reported.
"""
from __future__ import annotations

import os
import stat
import tempfile
from typing import TYPE_CHECKING, List, Optional, Tuple

from ..diagnostics import Diagnostic

if TYPE_CHECKING:  # pragma: no cover
    from .fixer import FileFix


def write_results(results: List["FileFix"], diagnostics: List[Diagnostic]
                  ) -> Tuple[List[Diagnostic], List[Diagnostic], List[str]]:
    """Write every fixed file. Returns the findings left (a file that could not be written keeps
    its own), the findings fixed, and one message per file not written."""
    fixed: List[Diagnostic] = []
    messages: List[str] = []
    for result in results:
        if result.fixed is None:
            continue
        problem = write_fixed(result.path, result.original, result.fixed)
        if problem is None:
            fixed.extend(result.applied)
            continue
        messages.append(f"{result.path}: {problem}")
        diagnostics = [d for d in diagnostics if d.path != result.path] + result.found
    return sorted(diagnostics, key=Diagnostic.sort_key), fixed, messages


def write_fixed(path: str, original: bytes, fixed: bytes) -> Optional[str]:
    """Replace `path`'s content; None on success, else why it was not written."""
    target = os.path.realpath(path)  # through a symlink, not over it
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
        if not mode & stat.S_IWUSR:
            return "the file is read-only; fixes not written"
        with open(target, "rb") as handle:
            if handle.read() != original:
                return "the file changed while devlint was fixing it; fixes not written"
    except OSError as error:
        return f"cannot re-read the file ({error.strerror or error}); fixes not written"
    directory, name = os.path.split(target)
    try:
        handle, temporary = tempfile.mkstemp(dir=directory or ".", prefix=f".{name}.", suffix=".devlint-tmp")
    except OSError as error:
        return f"cannot create a temporary file beside it ({error.strerror or error}); fixes not written"
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(fixed)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except OSError as error:
        _remove(temporary)
        return f"cannot write ({error.strerror or error}); the file is unchanged"
    return None


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
