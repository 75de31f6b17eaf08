"""Checking many files: in parallel processes, with progress on long runs."""
from __future__ import annotations

import multiprocessing
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from typing import Callable, FrozenSet, Iterable, List, Optional, Sequence, Tuple

from . import cache
from .diagnostics import Diagnostic
from .engine import check_bytes, raise_recursion_limit
from .rules import UnreadableFileRule

#: (path, enabled codes, cache folder or None)
Job = Tuple[str, FrozenSet[str], Optional[str]]
#: Below this many files, starting processes costs more than it saves.
PARALLEL_THRESHOLD = 8


def check_file(job: Job) -> List[Diagnostic]:
    path, enabled, cache_directory = job
    raise_recursion_limit()
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as error:
        if UnreadableFileRule.code not in enabled:
            return []
        rule = UnreadableFileRule
        return [Diagnostic(rule.code, rule.name, rule.severity, f"cannot read: {error.strerror or error}",
                           path, 1, 0, 1, 0)]
    if cache_directory is None:
        return check_bytes(data, path, enabled)
    entry = cache.key(data, path, enabled)
    diagnostics = cache.load(cache_directory, entry)
    if diagnostics is None:
        diagnostics = check_bytes(data, path, enabled)
        cache.store(cache_directory, entry, diagnostics)
    return diagnostics


def check_files(jobs: Sequence[Job], processes: int, progress: Optional[Callable[[int, int], None]] = None) -> List[Diagnostic]:
    results: Iterable[List[Diagnostic]]
    if processes <= 1 or len(jobs) < PARALLEL_THRESHOLD:
        results = map(check_file, jobs)
        return _gather(results, len(jobs), progress)
    chunksize = max(1, min(16, len(jobs) // (processes * 8)))
    with ProcessPoolExecutor(max_workers=processes, mp_context=_context()) as pool:
        return _gather(pool.map(check_file, jobs, chunksize=chunksize), len(jobs), progress)


def _gather(results: Iterable[List[Diagnostic]], total: int, progress) -> List[Diagnostic]:
    diagnostics: List[Diagnostic] = []
    for done, found in enumerate(results, start=1):
        diagnostics.extend(found)
        if progress is not None:
            progress(done, total)
    diagnostics.sort(key=Diagnostic.sort_key)
    return diagnostics


def _context():
    # fork starts workers without re-importing libcst; elsewhere use the default
    if sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("fork")
    return None


def default_processes() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        return os.cpu_count() or 1
