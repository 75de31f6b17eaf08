#!/usr/bin/env python3
"""Side-by-side wall-clock benchmark: devlint vs TorchFix on the same directories.

Usage:
    python bench/bench_vs_torchfix.py DIR [DIR ...] [--runs 5] [-j N]
        [--devlint CMD] [--torchfix CMD] [--warmup K] [--timeout S] [--json]

For every DIR both tools are run on that same directory, with the same job
count, ``--runs`` times each.  The tools alternate (devlint, torchfix, then
torchfix, devlint, ...) so that slow drifts of the machine (thermal, other
load, page cache) hit both tools alike.  Each run is timed with
time.perf_counter() around subprocess.run(); the tools' stdout is discarded and
their stderr is kept only to show it when a run fails.

What is reported is the median per tool and the ratio
``torchfix_median / devlint_median`` (how many times faster devlint is).
Speed claims are made from these ratios between tools run side by side on the
same machine, never from absolute seconds and never from timed asserts in tests.

Command lines (CMD is split with shlex):
  * devlint:  CMD + [DIR, "-j", N]
              default CMD: "devlint check --exit-zero -q --no-cache", with the
              devlint executable taken from next to sys.executable or PATH.
              Exit codes 0 and 1 (findings) count as success, anything else
              (2 = usage/internal error) is reported as a failure.
  * torchfix: CMD + ["-j", N, DIR]
              default CMD: /work/benchenv/bin/torchfix, else torchfix on PATH.
              TorchFix 0.7 has a real parallel option, -j/--jobs (default: the
              number of CPU cores; it hands the files to libcst's
              parallel_exec_transform_with_prettyprint, which uses a
              multiprocessing pool, or runs in-process when jobs == 1).
              Without --fix TorchFix never writes files: it prints findings and
              unified diffs of its fixes to stdout.  It exits 0 whether or not
              it finds anything and 1 when libcst failed on at least one file,
              so only 0 counts as success here.
              Its default rule set is "all rules except TOR3xx, TOR4xx,
              TOR9xx"; pass e.g. --torchfix "torchfix --select ALL" to change it.
              Note: TorchFix only parses files that contain the string "torch"
              somewhere (a cheap pre-filter); the "torch_files" column shows
              how many files that is, next to the total of .py files.

Either CMD may contain the placeholders {dir} and {jobs}; when it contains
{dir}, nothing is appended and the placeholders are substituted instead, e.g.
    --devlint "devlint check {dir} --jobs {jobs} --exit-zero -q --no-cache"

Stdlib only, Python 3.9+.
"""

import argparse
import json
import os
import platform
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

try:  # POSIX only; used for the CPU-time column
    import resource
except ImportError:  # pragma: no cover - Windows
    resource = None  # type: ignore[assignment]
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

DEVLINT_ARGS = ["check", "--exit-zero", "-q", "--no-cache"]
DEVLINT_OK_CODES = (0, 1)  # 1 = findings reported; 2 = error
TORCHFIX_OK_CODES = (0,)  # TorchFix: 1 = libcst failed on some file(s)
TORCHFIX_VENV_EXE = Path("/work/benchenv/bin/torchfix")
STDERR_TAIL_LINES = 25


class ToolFailed(Exception):
    """A tool exited with a code that is not success or 'findings found'."""

    def __init__(self, tool: str, argv: Sequence[str], rc: Optional[int], stderr: str):
        super().__init__(f"{tool} exited with {rc}")
        self.tool = tool
        self.argv = list(argv)
        self.rc = rc  # None: timed out or could not be started
        self.stderr = stderr


def default_devlint_cmd() -> Optional[List[str]]:
    """devlint next to the running interpreter (same venv), else on PATH."""
    beside = Path(sys.executable).parent / "devlint"
    if beside.is_file() and os.access(beside, os.X_OK):
        return [str(beside)] + DEVLINT_ARGS
    found = shutil.which("devlint")
    if found:
        return [found] + DEVLINT_ARGS
    return None


def default_torchfix_cmd() -> Optional[List[str]]:
    if TORCHFIX_VENV_EXE.is_file() and os.access(TORCHFIX_VENV_EXE, os.X_OK):
        return [str(TORCHFIX_VENV_EXE)]
    found = shutil.which("torchfix")
    if found:
        return [found]
    return None


def build_argv(base: List[str], directory: str, jobs: int, tool: str) -> List[str]:
    """Either substitute {dir}/{jobs} placeholders or append the usual args."""
    if any("{dir}" in part for part in base):
        return [
            part.replace("{dir}", directory).replace("{jobs}", str(jobs))
            for part in base
        ]
    if tool == "devlint":
        return base + [directory, "-j", str(jobs)]
    return base + ["-j", str(jobs), directory]


def survey_dir(directory: Path) -> Dict[str, int]:
    """Count .py files and lines, and how many files TorchFix would parse.

    Reading every file here also warms the OS page cache before the first
    timed run, so neither tool pays for cold disk reads.
    Files are the ones both tools see: every regular *.py file below DIR.
    """
    py_files = 0
    lines = 0
    torch_files = 0
    for path in sorted(directory.rglob("*.py")):
        if not path.is_file():
            continue
        py_files += 1
        with open(path, "rb") as fh:
            data = fh.read()
        lines += data.count(b"\n") + (0 if not data or data.endswith(b"\n") else 1)
        if b"torch" in data:
            torch_files += 1
    return {"py_files": py_files, "lines": lines, "torch_files": torch_files}


def loadavg() -> Optional[float]:
    """1-minute load average, or None where the OS has none."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


def stderr_tail(text: str, n: int = STDERR_TAIL_LINES) -> str:
    lines = text.rstrip().splitlines()
    return "\n".join(lines[-n:])


def children_cpu_s() -> Optional[float]:
    """User+system CPU seconds of all waited-for descendants so far."""
    if resource is None:
        return None
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def time_once(
    tool: str, argv: List[str], ok_codes: Tuple[int, ...], timeout: Optional[float]
) -> Tuple[float, Optional[float]]:
    """Run argv once; return (wall seconds, CPU seconds or None).

    Raise ToolFailed on a bad exit.  The CPU time covers the tool and the
    worker processes it waited for (a multiprocessing pool's workers are).
    It is less disturbed than wall time by other load on the machine, but
    wall time is the headline number.
    """
    posix = os.name == "posix"
    with tempfile.TemporaryFile() as err:
        cpu_before = children_cpu_s()
        start = time.perf_counter()
        try:
            # Own process group, so that a timed-out tool's worker processes
            # (TorchFix/libcst use a multiprocessing pool) are killed too.
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err,
                start_new_session=posix,
            )
        except OSError as exc:  # e.g. executable not found
            raise ToolFailed(tool, argv, None, f"[could not start: {exc}]")
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            if posix:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            else:
                proc.kill()
            proc.wait()
            err.seek(0)
            raise ToolFailed(
                tool, argv, None,
                f"[timed out after {timeout} s]\n"
                + err.read().decode("utf-8", "replace"),
            )
        elapsed = time.perf_counter() - start
        cpu_after = children_cpu_s()
        if rc not in ok_codes:
            err.seek(0)
            raise ToolFailed(tool, argv, rc, err.read().decode("utf-8", "replace"))
    cpu = (cpu_after - cpu_before) if cpu_before is not None and cpu_after is not None else None
    return elapsed, cpu


def report_failure(exc: ToolFailed, directory: str) -> None:
    bar = "!" * 72
    what = f"exit code {exc.rc}" if exc.rc is not None else "timed out / could not start"
    print(bar, file=sys.stderr)
    print(f"!! {exc.tool} FAILED on {directory}: {what}", file=sys.stderr)
    print(f"!! command: {shlex.join(exc.argv)}", file=sys.stderr)
    print(f"!! last {STDERR_TAIL_LINES} lines of stderr:", file=sys.stderr)
    print(stderr_tail(exc.stderr) or "(empty)", file=sys.stderr)
    print(bar, file=sys.stderr)
    sys.stderr.flush()


def bench_dir(
    directory: str,
    tools: Dict[str, List[str]],
    ok_codes: Dict[str, Tuple[int, ...]],
    jobs: int,
    runs: int,
    warmup: int,
    timeout: Optional[float],
    verbose: bool,
) -> dict:
    survey = survey_dir(Path(directory))
    load_before = loadavg()
    argvs = {name: build_argv(base, directory, jobs, name) for name, base in tools.items()}
    times: Dict[str, List[float]] = {name: [] for name in tools}
    cpu_times: Dict[str, List[float]] = {name: [] for name in tools}
    failed: Dict[str, dict] = {}

    def run(name: str, record: bool, label: str) -> None:
        if name in failed:
            return  # stop timing a tool once it has failed on this dir
        try:
            elapsed, cpu = time_once(name, argvs[name], ok_codes[name], timeout)
        except ToolFailed as exc:
            report_failure(exc, directory)
            failed[name] = {"rc": exc.rc, "stderr_tail": stderr_tail(exc.stderr)}
            return
        if record:
            times[name].append(elapsed)
            if cpu is not None:
                cpu_times[name].append(cpu)
        if verbose:
            cpu_txt = f" (cpu {cpu:.3f} s)" if cpu is not None else ""
            print(f"  {directory}: {label} {name}: {elapsed:.3f} s{cpu_txt}", file=sys.stderr)

    names = list(tools)
    for i in range(warmup):
        for name in names:
            run(name, record=False, label=f"warmup {i + 1}/{warmup}")
    for i in range(runs):
        # Alternate which tool goes first each round.
        order = names if i % 2 == 0 else list(reversed(names))
        for name in order:
            run(name, record=True, label=f"run {i + 1}/{runs}")

    result = {
        "dir": directory,
        **survey,
        "jobs": jobs,
        "runs": runs,
        "commands": {name: argvs[name] for name in names},
        "times_s": times,
        "cpu_times_s": cpu_times,
        "failed": failed,
        # Our own runs add about `jobs` to the load; much more means that
        # something else was running and wall times are suspect.
        "loadavg_1min_before": load_before,
        "loadavg_1min_after": loadavg(),
    }
    for name in names:
        result[f"{name}_median_s"] = (
            statistics.median(times[name]) if times[name] and name not in failed else None
        )
        result[f"{name}_min_s"] = (
            min(times[name]) if times[name] and name not in failed else None
        )
        result[f"{name}_cpu_median_s"] = (
            statistics.median(cpu_times[name])
            if cpu_times[name] and name not in failed else None
        )
    d, t = result.get("devlint_median_s"), result.get("torchfix_median_s")
    result["ratio_torchfix_over_devlint"] = (t / d) if (d and t) else None
    d, t = result.get("devlint_cpu_median_s"), result.get("torchfix_cpu_median_s")
    result["cpu_ratio_torchfix_over_devlint"] = (t / d) if (d and t) else None
    return result


def fmt_s(value: Optional[float], failed: Optional[dict]) -> str:
    if failed is not None:
        if failed["rc"] is None:
            return "FAILED(timeout/start)"
        return f"FAILED(rc={failed['rc']})"
    if value is None:
        return "-"
    return f"{value:.3f}"


def print_table(results: List[dict]) -> None:
    header = [
        "dir", "py_files", "torch_files", "lines",
        "devlint_med_s", "torchfix_med_s", "ratio(tf/dl)", "cpu_ratio",
    ]
    rows = []
    for r in results:
        ratio = r["ratio_torchfix_over_devlint"]
        cpu_ratio = r["cpu_ratio_torchfix_over_devlint"]
        rows.append([
            r["dir"],
            str(r["py_files"]),
            str(r["torch_files"]),
            str(r["lines"]),
            fmt_s(r.get("devlint_median_s"), r["failed"].get("devlint")),
            fmt_s(r.get("torchfix_median_s"), r["failed"].get("torchfix")),
            f"{ratio:.2f}x" if ratio is not None else "-",
            f"{cpu_ratio:.2f}x" if cpu_ratio is not None else "-",
        ])
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(header)]
    left_aligned = {0}

    def line(cells: List[str]) -> str:
        return "  ".join(
            c.ljust(w) if i in left_aligned else c.rjust(w)
            for i, (c, w) in enumerate(zip(cells, widths))
        )
    print(line(header))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print(line(row))


def tool_version(argv0: str) -> Optional[str]:
    try:
        proc = subprocess.run(
            [argv0, "--version"], capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    out = (proc.stdout or proc.stderr).strip()
    return out.splitlines()[0] if proc.returncode == 0 and out else None


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="Time devlint against TorchFix on the same directories "
        "(wall clock, medians, ratio).",
    )
    p.add_argument("dirs", nargs="+", metavar="DIR", help="directory to lint")
    p.add_argument("--runs", type=int, default=5, help="timed runs per tool per DIR (default 5)")
    p.add_argument(
        "-j", "--jobs", type=int, default=os.cpu_count() or 1,
        help="job count given to both tools (default: os.cpu_count() = %(default)s)",
    )
    p.add_argument(
        "--devlint", metavar="CMD", default=None,
        help="devlint command prefix (default: 'devlint check --exit-zero -q' "
        "from next to sys.executable or PATH); DIR and '-j N' are appended",
    )
    p.add_argument(
        "--torchfix", metavar="CMD", default=None,
        help=f"TorchFix command prefix (default: {TORCHFIX_VENV_EXE} or 'torchfix' on PATH); "
        "'-j N DIR' is appended",
    )
    p.add_argument("--warmup", type=int, default=0,
                   help="untimed runs per tool per DIR before timing (default 0; "
                   "the file cache is warmed anyway by reading every file)")
    p.add_argument("--timeout", type=float, default=None,
                   help="seconds after which one run counts as failed (default: none)")
    p.add_argument("--json", action="store_true", help="print results as JSON on stdout")
    p.add_argument("-q", "--quiet", action="store_true", help="no per-run progress on stderr")
    args = p.parse_args(argv)
    if args.runs < 1:
        p.error("--runs must be >= 1")
    if args.jobs < 1:
        p.error("-j must be >= 1")
    for d in args.dirs:
        if not Path(d).is_dir():
            p.error(f"not a directory: {d}")
    return args


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)

    devlint = shlex.split(args.devlint) if args.devlint else default_devlint_cmd()
    torchfix = shlex.split(args.torchfix) if args.torchfix else default_torchfix_cmd()
    missing = []
    if not devlint:
        missing.append("devlint not found next to sys.executable nor on PATH; pass --devlint CMD")
    if not torchfix:
        missing.append(
            f"torchfix not found at {TORCHFIX_VENV_EXE} nor on PATH; "
            "pip install torchfix into a venv and pass --torchfix CMD"
        )
    if missing:
        for m in missing:
            print(f"error: {m}", file=sys.stderr)
        return 2

    tools = {"devlint": devlint, "torchfix": torchfix}
    ok_codes = {"devlint": DEVLINT_OK_CODES, "torchfix": TORCHFIX_OK_CODES}

    start_load = loadavg()
    cpus = os.cpu_count() or 1
    if start_load is not None and start_load > 0.5 * cpus:
        print(
            f"warning: the machine is busy before the benchmark starts "
            f"(1-min load average {start_load} on {cpus} CPUs); wall times "
            "will be inflated - prefer an idle machine, or compare cpu_ratio",
            file=sys.stderr,
        )
    meta = {
        "loadavg_1min_at_start": start_load,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "jobs": args.jobs,
        "runs": args.runs,
        "warmup": args.warmup,
        "torchfix_version": tool_version(torchfix[0]),
        "note": "TorchFix's -j/--jobs is given the same N as devlint's -j. "
        "TorchFix only parses files containing 'torch' (see torch_files).",
    }
    if not args.json:
        print(
            f"# devlint vs TorchFix: {args.runs} timed run(s) per tool, "
            f"-j {args.jobs} for both (TorchFix -j/--jobs), "
            f"{os.cpu_count()} CPU(s), Python {meta['python']}, "
            f"TorchFix {meta['torchfix_version'] or '?'}",
        )
        print(f"# devlint:  {shlex.join(build_argv(devlint, 'DIR', args.jobs, 'devlint'))}")
        print(f"# torchfix: {shlex.join(build_argv(torchfix, 'DIR', args.jobs, 'torchfix'))}")
        sys.stdout.flush()

    results = []
    for d in args.dirs:
        results.append(
            bench_dir(d, tools, ok_codes, args.jobs, args.runs, args.warmup,
                      args.timeout, verbose=not args.quiet)
        )

    any_failed = any(r["failed"] for r in results)
    if args.json:
        json.dump({"meta": meta, "results": results}, sys.stdout, indent=2)
        print()
    else:
        print_table(results)
        print("# ratio = torchfix median wall time / devlint median wall time "
              "(>1: devlint is faster)")
        print("# cpu_ratio = the same for user+sys CPU seconds of each tool and its "
              "workers (steadier when the machine is busy)")
        if any_failed:
            print("# FAILED cells: the tool exited with an error; see stderr above.")
    return 1 if any_failed else 0


if __name__ == "__main__":
    sys.exit(main())
