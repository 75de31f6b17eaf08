"""Checking many files: in parallel processes, in two phases, with progress on long runs.

Phase 1 analyses every file on its own and collects its summary for the
project index.  Phase 2 analyses again, with the index, only the files whose
imports the index can say something about; their diagnostics replace those
of phase 1.  Both phases are cached by content (phase 2 also by what the
file's imports resolve to).  With `--fix`, the files that have fixes are then
fixed in memory in the same processes, with the index; the caller writes them.
"""
from __future__ import annotations

import multiprocessing
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from typing import Callable, Dict, FrozenSet, List, NamedTuple, Optional, Sequence, Tuple, Union

from . import cache
from .analysis.project import ProjectPlace
from .analysis.project import Exports, ProjectIndex, module_name
from .diagnostics import Diagnostic
from .engine import DEFAULT_FALLBACK, analyse_text, check_bytes, raise_recursion_limit
from .fixes.fixer import FileFix, applicable, fix_bytes
from .rules import UnreadableFileRule


class Job(NamedTuple):
    path: str
    enabled: FrozenSet[str]
    cache_directory: Optional[str]
    fallback_style: str = DEFAULT_FALLBACK   # the fixes' spelling of a guarded device


#: A Job, or the plain (path, enabled, cache folder) tuple the tests write.
JobLike = Union[Job, Tuple[str, FrozenSet[str], Optional[str]]]
Result = Tuple[List[Diagnostic], Optional[Exports]]
Progress = Callable[[int, int], None]
#: Below this many files, starting processes costs more than it saves.
PARALLEL_THRESHOLD = 8

#: Per process: every checked module's name, and the index (phase 2 only).
_PROJECT: Dict[str, object] = {"names": frozenset(), "index": None}


def _set_project(names: FrozenSet[str], index: Optional[ProjectIndex]) -> None:
    _PROJECT["names"] = names
    _PROJECT["index"] = index


def check_file(job: JobLike) -> Result:
    job = Job(*job)
    raise_recursion_limit()
    try:
        data = _read(job.path)
    except OSError as error:
        return _unreadable(job, error), None
    return _analyse(data, job, _place(job.path))


def _read(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def _unreadable(job: Job, error: OSError) -> List[Diagnostic]:
    rule = UnreadableFileRule
    if rule.code not in job.enabled:
        return []
    return [Diagnostic(rule.code, rule.name, rule.severity, f"cannot read: {error.strerror or error}",
                       job.path, 1, 0, 1, 0)]


def _place(path: str) -> ProjectPlace:
    root, module, is_package = module_name(path)
    return ProjectPlace(root, module, is_package, _PROJECT["names"], _PROJECT["index"])  # type: ignore[arg-type]


def _analyse(data: bytes, job: Job, place: ProjectPlace) -> Result:
    if job.cache_directory is None:
        return check_bytes(data, job.path, job.enabled, place, job.fallback_style)
    index: Optional[ProjectIndex] = _PROJECT["index"]  # type: ignore[assignment]
    project = index.digest_for_path(job.path) if index is not None else ""
    entry = cache.key(data, job.path, job.enabled, f"{project}|{job.fallback_style}")
    cached = cache.load(job.cache_directory, entry)
    if cached is not None:
        return cached
    result = check_bytes(data, job.path, job.enabled, place, job.fallback_style)
    cache.store(job.cache_directory, entry, *result)
    return result


def fix_file(task: Tuple[JobLike, bool]) -> FileFix:
    """Fix one file in memory (with what the project index knows); writing is the caller's."""
    job, unsafe = Job(*task[0]), task[1]
    raise_recursion_limit()
    try:
        data = _read(job.path)
    except OSError as error:
        return FileFix(job.path, b"", remaining=_unreadable(job, error))
    place = _place(job.path)
    found, _ = _analyse(data, job, place)

    def analyse(text: str) -> List[Diagnostic]:
        return analyse_text(text, job.path, job.enabled, place, job.fallback_style)[0]

    return fix_bytes(data, job.path, found, analyse, unsafe)


def check_files(jobs: Sequence[JobLike], processes: int, progress: Optional[Progress] = None) -> List[Diagnostic]:
    by_path, _, _ = _check_project([Job(*job) for job in jobs], processes, progress)
    return _sorted(by_path)


def fix_files(jobs: Sequence[JobLike], processes: int, unsafe: bool,
              progress: Optional[Progress] = None) -> Tuple[List[Diagnostic], List[FileFix]]:
    """Every file checked as a project; the files with applicable fixes fixed in memory.
    Returns the diagnostics left after fixing, and one result per fixed file."""
    jobs = [Job(*job) for job in jobs]
    by_path, names, index = _check_project(jobs, processes, progress)
    to_fix = [(job, unsafe) for job in jobs if any(applicable(d, unsafe) for d in by_path[job.path])]
    results: List[FileFix] = _run(fix_file, to_fix, processes, names, index, None) if to_fix else []
    for result in results:
        by_path[result.path] = result.remaining
    return _sorted(by_path), results


def _check_project(jobs: List[Job], processes: int, progress: Optional[Progress]):
    names = frozenset(module_name(job.path)[1] for job in jobs)
    first = _run(check_file, jobs, processes, names, None, progress)
    by_path: Dict[str, List[Diagnostic]] = {job.path: found for job, (found, _) in zip(jobs, first)}
    index: Optional[ProjectIndex] = None
    try:
        index = ProjectIndex(summary for _, summary in first)
        again = [job for job, (_, summary) in zip(jobs, first) if summary is not None and index.digest_for(summary)]
    except Exception:  # noqa: BLE001 - a summary we cannot use costs cross-file knowledge, never the run
        if os.environ.get("DEVLINT_DEBUG"):
            raise
        again, index = [], None
    if again:
        for job, (found, _) in zip(again, _run(check_file, again, processes, names, index, None)):
            by_path[job.path] = found
    return by_path, names, index


def _sorted(by_path: Dict[str, List[Diagnostic]]) -> List[Diagnostic]:
    diagnostics = [d for found in by_path.values() for d in found]
    diagnostics.sort(key=Diagnostic.sort_key)
    return diagnostics


def _run(function, tasks: Sequence, processes: int, names: FrozenSet[str], index: Optional[ProjectIndex],
         progress: Optional[Progress]) -> list:
    if processes <= 1 or len(tasks) < PARALLEL_THRESHOLD:
        _set_project(names, index)
        try:
            return _gather(map(function, tasks), len(tasks), progress)
        finally:
            _set_project(frozenset(), None)
    chunksize = max(1, min(16, len(tasks) // (processes * 8)))
    with ProcessPoolExecutor(max_workers=processes, mp_context=_context(),
                             initializer=_set_project, initargs=(names, index)) as pool:
        return _gather(pool.map(function, tasks, chunksize=chunksize), len(tasks), progress)


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
