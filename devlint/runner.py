"""Checking many files: in parallel processes, in two phases, with progress on long runs.

Phase 1 analyses every file on its own and collects its summary for the
project index.  Phase 2 analyses again, with the index, only the files whose
imports the index can say something about; their diagnostics replace those
of phase 1.  Both phases are cached by content (phase 2 also by what the
file's imports resolve to).
"""
from __future__ import annotations

import multiprocessing
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from typing import Callable, Dict, FrozenSet, List, Optional, Sequence, Tuple

from . import cache
from .analysis.project import ProjectPlace
from .analysis.project import Exports, ProjectIndex, module_name
from .diagnostics import Diagnostic
from .engine import check_bytes, raise_recursion_limit
from .rules import UnreadableFileRule

#: (path, enabled codes, cache folder or None)
Job = Tuple[str, FrozenSet[str], Optional[str]]
Result = Tuple[List[Diagnostic], Optional[Exports]]
Progress = Callable[[int, int], None]
#: Below this many files, starting processes costs more than it saves.
PARALLEL_THRESHOLD = 8

#: Per process: every checked module's name, and the index (phase 2 only).
_PROJECT: Dict[str, object] = {"names": frozenset(), "index": None}


def _set_project(names: FrozenSet[str], index: Optional[ProjectIndex]) -> None:
    _PROJECT["names"] = names
    _PROJECT["index"] = index


def check_file(job: Job) -> Result:
    path, enabled, cache_directory = job
    raise_recursion_limit()
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as error:
        if UnreadableFileRule.code not in enabled:
            return [], None
        rule = UnreadableFileRule
        return [Diagnostic(rule.code, rule.name, rule.severity, f"cannot read: {error.strerror or error}",
                           path, 1, 0, 1, 0)], None
    index: Optional[ProjectIndex] = _PROJECT["index"]  # type: ignore[assignment]
    root, module, is_package = module_name(path)
    place = ProjectPlace(root, module, is_package, _PROJECT["names"], index)  # type: ignore[arg-type]
    if cache_directory is None:
        return check_bytes(data, path, enabled, place)
    entry = cache.key(data, path, enabled, index.digest_for_path(path) if index is not None else "")
    cached = cache.load(cache_directory, entry)
    if cached is not None:
        return cached
    result = check_bytes(data, path, enabled, place)
    cache.store(cache_directory, entry, *result)
    return result


def check_files(jobs: Sequence[Job], processes: int, progress: Optional[Progress] = None) -> List[Diagnostic]:
    names = frozenset(module_name(path)[1] for path, _, _ in jobs)
    first = _run(jobs, processes, names, None, progress)
    by_path: Dict[str, List[Diagnostic]] = {job[0]: found for job, (found, _) in zip(jobs, first)}
    try:
        index = ProjectIndex(summary for _, summary in first)
        again = [job for job, (_, summary) in zip(jobs, first) if summary is not None and index.digest_for(summary)]
    except Exception:  # noqa: BLE001 - a summary we cannot use costs cross-file knowledge, never the run
        if os.environ.get("DEVLINT_DEBUG"):
            raise
        again = []
    if again:
        for job, (found, _) in zip(again, _run(again, processes, names, index, None)):
            by_path[job[0]] = found
    diagnostics = [d for found in by_path.values() for d in found]
    diagnostics.sort(key=Diagnostic.sort_key)
    return diagnostics


def _run(jobs: Sequence[Job], processes: int, names: FrozenSet[str], index: Optional[ProjectIndex],
         progress: Optional[Progress]) -> List[Result]:
    if processes <= 1 or len(jobs) < PARALLEL_THRESHOLD:
        _set_project(names, index)
        try:
            return _gather(map(check_file, jobs), len(jobs), progress)
        finally:
            _set_project(frozenset(), None)
    chunksize = max(1, min(16, len(jobs) // (processes * 8)))
    with ProcessPoolExecutor(max_workers=processes, mp_context=_context(),
                             initializer=_set_project, initargs=(names, index)) as pool:
        return _gather(pool.map(check_file, jobs, chunksize=chunksize), len(jobs), progress)


def _gather(results, total: int, progress: Optional[Progress]) -> List[Result]:
    gathered: List[Result] = []
    for done, result in enumerate(results, start=1):
        gathered.append(result)
        if progress is not None:
            progress(done, total)
    return gathered


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
