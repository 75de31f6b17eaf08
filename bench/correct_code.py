#!/usr/bin/env python3
"""Silence on correct code: how much devlint reports on released PyTorch code.

Usage:
    python bench/correct_code.py [NAME ...] [--corpus ROOT] [--devlint CMD]
        [--extra-args ARGS] [--versions NAME=VER[,NAME=VER...]] [--json OUT]
        [--show-infos] [--no-source] [--check-targets] [--timeout S]

The code bases are the folders directly under ROOT (default /work/corpus),
except those whose names start with "_" (downloads, unpacked sdists); give
NAMEs to check only some of them.  `bench/get_corpora.sh` fills ROOT with the
package sources of accelerate, lightning, timm, torchvision and transformers at
exact versions, each folder holding only the package's .py files and a VERSION
file.

Released, widely used code is taken to be correct as far as device placement
goes: every error devlint reports there is presumed false until a human has
read it, and every warning is noise a user has to read.  For each code base
the script

  * counts the files devlint checks and their lines: every *.py / *.pyi file
    below the folder, skipping the folders devlint skips by default (.git,
    build, dist, __pycache__, ...; none occur in the corpora above).  Lines
    are physical lines (newline count, plus one for a last line without
    newline), comments and blank lines included;
  * runs, in that folder,
        CMD check --output-format json --exit-zero --no-cache [ARGS] FOLDER
    where CMD is --devlint (default: the devlint next to sys.executable, i.e.
    in the running venv, else `devlint` on PATH) and ARGS is --extra-args
    (e.g. "--select ALL" or "-j 2"); a CMD containing {dir} is used as the
    whole command line instead, with {dir} replaced by the folder;
  * counts the findings by severity and by code.

It prints a markdown table (code base, version, files, lines, errors,
warnings, infos, warnings per 5,000 lines, seconds devlint took) with a total
row, then every error- and warning-severity finding, grouped by code base, as
`path:line CODE message` with the source line below it, so that a human can
review them (--show-infos lists the info findings too).

The version of a code base comes from --versions, else from the first line of
FOLDER/VERSION, else "?".

Targets (see bench/README.md): 0 errors (every error on this code is false)
and at most 1 warning per 5,000 lines, over each code base and in total.
With --check-targets the exit status is 1 when a target is missed; otherwise
it is 0, or 1 when devlint failed (exit status not 0, or output not JSON) on
some code base, which is reported on stderr and as FAILED in the table.

--json OUT writes the raw numbers (per code base: files, lines, counts by
severity and by code, seconds, the command, and every finding) to OUT.

Stdlib only, Python 3.9+.
"""

import argparse
import fnmatch
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Dict, List, Optional, Sequence

DEFAULT_CORPUS = "/work/corpus"
DEVLINT_CHECK_ARGS = ["check", "--output-format", "json", "--exit-zero", "--no-cache"]
PER_LINES = 5000
TARGET_ERRORS = 0
TARGET_WARNINGS_PER_5K = 1.0
SEVERITIES = ("error", "warning", "info")
STDERR_TAIL_LINES = 25
# devlint's DEFAULT_EXCLUDES (devlint/config.py), matched against names.
DEVLINT_DEFAULT_EXCLUDES = (
    ".git", ".hg", ".svn", ".bzr", ".venv", "venv", ".tox", ".nox", ".eggs", "*.egg-info",
    "build", "dist", "node_modules", "__pycache__", ".mypy_cache", ".pytest_cache",
    ".ruff_cache", ".devlint_cache", "site-packages", "__pypackages__", ".ipynb_checkpoints",
)
PYTHON_SUFFIXES = (".py", ".pyi")


def excluded(name: str) -> bool:
    return any(fnmatch.fnmatch(name, pattern) for pattern in DEVLINT_DEFAULT_EXCLUDES)


def survey(folder: Path) -> Dict[str, object]:
    """The files devlint checks below folder (relative paths) and their lines."""
    files: Dict[str, int] = {}
    for directory, subdirs, names in os.walk(folder):
        subdirs[:] = sorted(d for d in subdirs if not excluded(d))
        for name in sorted(names):
            if not name.endswith(PYTHON_SUFFIXES) or excluded(name):
                continue
            path = Path(directory) / name
            if not path.is_file():
                continue
            data = path.read_bytes()
            lines = data.count(b"\n") + (0 if not data or data.endswith(b"\n") else 1)
            files[path.relative_to(folder).as_posix()] = lines
    return {"files": len(files), "lines": sum(files.values()), "per_file": files}


def default_devlint() -> Optional[List[str]]:
    """The devlint installed next to this interpreter (same venv), else on PATH.

    The venv's own first, as bench_vs_torchfix.py does: with the venv's
    python, a stale devlint earlier on PATH is not picked up by mistake.
    """
    beside = Path(sys.executable).parent / "devlint"
    if beside.is_file() and os.access(beside, os.X_OK):
        return [str(beside)]
    found = shutil.which("devlint")
    if found:
        return [found]
    return None


def absolute_command(cmd: List[str]) -> List[str]:
    """Make a relative executable path absolute: devlint runs in another folder."""
    if cmd and os.sep in cmd[0] and not os.path.isabs(cmd[0]) and os.path.exists(cmd[0]):
        return [os.path.abspath(cmd[0])] + cmd[1:]
    return cmd


def build_argv(devlint: List[str], extra: List[str], folder: Path) -> List[str]:
    if any("{dir}" in part for part in devlint):
        return [part.replace("{dir}", str(folder)) for part in devlint]
    return devlint + DEVLINT_CHECK_ARGS + extra + [str(folder)]


def read_version(folder: Path, versions: Dict[str, str]) -> str:
    if folder.name in versions:
        return versions[folder.name]
    version_file = folder / "VERSION"
    if version_file.is_file():
        first = version_file.read_text(encoding="utf-8", errors="replace").strip().splitlines()
        if first and first[0].strip():
            return first[0].strip()
    return "?"


def relative(path: str, folder: Path) -> str:
    """A finding's path relative to the code base's folder, when it is inside."""
    try:
        return Path(os.path.abspath(os.path.join(folder, path))).relative_to(folder).as_posix()
    except ValueError:
        return path


def stderr_tail(text: str, n: int = STDERR_TAIL_LINES) -> str:
    return "\n".join(text.rstrip().splitlines()[-n:])


def run_devlint(argv: List[str], folder: Path, timeout: Optional[float]) -> dict:
    """Run devlint once; return findings or a failure description."""
    start = time.perf_counter()
    try:
        proc = subprocess.run(
            argv, cwd=str(folder), stdin=subprocess.DEVNULL,
            capture_output=True, timeout=timeout,
        )
    except OSError as exc:
        return {"failed": f"could not start: {exc}", "seconds": None}
    except subprocess.TimeoutExpired:
        return {"failed": f"timed out after {timeout} s", "seconds": None}
    seconds = time.perf_counter() - start
    stderr = proc.stderr.decode("utf-8", "replace")
    if proc.returncode != 0:
        return {"failed": f"exit status {proc.returncode}", "stderr": stderr_tail(stderr),
                "seconds": seconds}
    try:
        findings = json.loads(proc.stdout.decode("utf-8"))
        if not isinstance(findings, list):
            raise ValueError("not a JSON list")
    except ValueError as exc:
        return {"failed": f"output is not a JSON list of findings ({exc})",
                "stderr": stderr_tail(stderr), "seconds": seconds}
    return {"findings": findings, "seconds": seconds, "stderr": stderr_tail(stderr)}


def source_line(folder: Path, path: str, line: int) -> Optional[str]:
    try:
        with open(folder / path, encoding="utf-8", errors="replace") as fh:
            for number, text in enumerate(fh, 1):
                if number == line:
                    return text.strip()
    except OSError:
        return None
    return None


def per_5k(count: int, lines: int) -> Optional[float]:
    return count * PER_LINES / lines if lines else None


def check_base(folder: Path, version: str, devlint: List[str], extra: List[str],
               timeout: Optional[float]) -> dict:
    counted = survey(folder)
    argv = build_argv(devlint, extra, folder)
    print(f"# {folder.name}: {counted['files']} files, {counted['lines']} lines: "
          f"{shlex.join(argv)}", file=sys.stderr, flush=True)
    outcome = run_devlint(argv, folder, timeout)
    result = {
        "name": folder.name,
        "folder": str(folder),
        "version": version,
        "files": counted["files"],
        "lines": counted["lines"],
        "command": argv,
        "seconds": outcome["seconds"],
        "failed": outcome.get("failed"),
        "stderr_tail": outcome.get("stderr") or "",
    }
    if result["failed"]:
        return result
    findings = []
    for raw in outcome["findings"]:
        item = dict(raw)
        item["path"] = relative(str(raw.get("path", "")), folder)
        findings.append(item)
    findings.sort(key=lambda d: (d["path"], d.get("line", 0), d.get("column", 0), d.get("code", "")))
    unknown_paths = sorted({f["path"] for f in findings} - set(counted["per_file"]))
    severities = Counter(f.get("severity", "?") for f in findings)
    result.update({
        "errors": severities.get("error", 0),
        "warnings": severities.get("warning", 0),
        "infos": severities.get("info", 0),
        "other_severities": {k: v for k, v in severities.items() if k not in SEVERITIES},
        "by_code": dict(sorted(Counter(f.get("code", "?") for f in findings).items())),
        "warnings_per_5k_lines": per_5k(severities.get("warning", 0), counted["lines"]),
        "paths_not_counted": unknown_paths,
        "findings": findings,
    })
    if unknown_paths:
        print(f"warning: {folder.name}: devlint reported on files this script did not count: "
              f"{', '.join(unknown_paths[:5])}", file=sys.stderr)
    return result


def fmt_int(n: int) -> str:
    return f"{n:,}"


def fmt_rate(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:.2f}"


def totals(results: List[dict]) -> Optional[dict]:
    ok = [r for r in results if not r["failed"]]
    if not ok:
        return None
    lines = sum(r["lines"] for r in ok)
    warnings = sum(r["warnings"] for r in ok)
    return {
        "name": "total" if len(ok) == len(results) else "total (not FAILED)",
        "version": "",
        "files": sum(r["files"] for r in ok),
        "lines": lines,
        "errors": sum(r["errors"] for r in ok),
        "warnings": warnings,
        "infos": sum(r["infos"] for r in ok),
        "warnings_per_5k_lines": per_5k(warnings, lines),
        "seconds": sum(r["seconds"] or 0 for r in ok),
    }


def print_table(results: List[dict], total: Optional[dict]) -> None:
    print("| code base | version | files | lines | errors | warnings | infos "
          "| warnings / 5,000 lines | devlint s |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in results:
        if r["failed"]:
            cells = ["FAILED"] * 4
        else:
            cells = [fmt_int(r["errors"]), fmt_int(r["warnings"]), fmt_int(r["infos"]),
                     fmt_rate(r["warnings_per_5k_lines"])]
        seconds = "-" if r["seconds"] is None else f"{r['seconds']:.1f}"
        print(f"| {r['name']} | {r['version']} | {fmt_int(r['files'])} | {fmt_int(r['lines'])} | "
              + " | ".join(cells) + f" | {seconds} |")
    if total and len(results) > 1:
        print(f"| **{total['name']}** | | {fmt_int(total['files'])} | {fmt_int(total['lines'])} | "
              f"{fmt_int(total['errors'])} | {fmt_int(total['warnings'])} | {fmt_int(total['infos'])} | "
              f"{fmt_rate(total['warnings_per_5k_lines'])} | {total['seconds']:.1f} |")


def code_span(text: str) -> str:
    """text as a markdown code span, whatever backticks it holds."""
    run = longest = 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def print_findings(results: List[dict], show_infos: bool, show_source: bool) -> None:
    shown = ("error", "warning", "info") if show_infos else ("error", "warning")
    print()
    print(f"## Findings of severity {', '.join(shown)}")
    for r in results:
        print()
        print(f"### {r['name']} {r['version']}")
        print()
        if r["failed"]:
            print(f"devlint FAILED: {r['failed']}")
            continue
        listed = [f for f in r["findings"] if f.get("severity") in shown]
        if r["by_code"]:
            print("By code (all severities): "
                  + ", ".join(f"{code} {n}" for code, n in r["by_code"].items()) + ".")
            print()
        if not listed:
            print("None.")
            continue
        folder = Path(r["folder"])
        for f in listed:
            print(f"- `{f['path']}:{f.get('line')}` **{f.get('code')}** ({f.get('severity')}) "
                  f"{f.get('message', '')}")
            if show_source:
                text = source_line(folder, f["path"], int(f.get("line", 0)))
                if text:
                    print(f"  {code_span(text[:200])}")


def parse_versions(items: Sequence[str], parser: argparse.ArgumentParser) -> Dict[str, str]:
    versions: Dict[str, str] = {}
    for item in items:
        for pair in item.split(","):
            if not pair.strip():
                continue
            name, sep, version = pair.partition("=")
            if not sep or not name.strip() or not version.strip():
                parser.error(f"--versions wants NAME=VERSION, not {pair!r}")
            versions[name.strip()] = version.strip()
    return versions


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="Count what devlint reports on released PyTorch code bases "
        "(taken to be correct) and list the errors and warnings for review.",
    )
    p.add_argument("names", nargs="*", metavar="NAME",
                   help="code bases (folders under --corpus) to check; default: all "
                   "whose names do not start with '_'")
    p.add_argument("--corpus", default=DEFAULT_CORPUS, metavar="ROOT",
                   help="folder holding one folder per code base (default: %(default)s)")
    p.add_argument("--devlint", metavar="CMD", default=None,
                   help="devlint command (split like a shell would; default: devlint next to "
                   "sys.executable, else on PATH); '"
                   + " ".join(DEVLINT_CHECK_ARGS) + " [ARGS] FOLDER' is appended, "
                   "unless CMD contains {dir}, which is then replaced by the folder")
    p.add_argument("--extra-args", metavar="ARGS", default="",
                   help="more devlint arguments, placed before the folder (e.g. '--select ALL')")
    p.add_argument("--versions", metavar="NAME=VER[,...]", action="append", default=[],
                   help="versions to print, overriding FOLDER/VERSION (repeatable)")
    p.add_argument("--json", metavar="OUT", default=None, help="write the raw numbers to OUT")
    p.add_argument("--show-infos", action="store_true", help="list info findings too")
    p.add_argument("--no-source", action="store_true",
                   help="do not print the source line under each finding")
    p.add_argument("--check-targets", action="store_true",
                   help=f"exit 1 when a code base or the total has more than {TARGET_ERRORS} "
                   f"errors or more than {TARGET_WARNINGS_PER_5K:g} warning per {PER_LINES:,} lines")
    p.add_argument("--timeout", type=float, default=None,
                   help="seconds after which a devlint run counts as failed (default: none)")
    args = p.parse_args(argv)
    args.versions = parse_versions(args.versions, p)
    corpus = Path(args.corpus)
    if not corpus.is_dir():
        p.error(f"not a directory: {corpus}")
    if args.names:
        folders = []
        for name in args.names:
            folder = corpus / name
            if not folder.is_dir():
                p.error(f"no code base {name!r} under {corpus}")
            folders.append(folder)
    else:
        folders = sorted(d for d in corpus.iterdir() if d.is_dir() and not d.name.startswith("_"))
        if not folders:
            p.error(f"no code bases under {corpus} (run bench/get_corpora.sh)")
    args.folders = [f.resolve() for f in folders]
    return args


def devlint_version(devlint: List[str]) -> Optional[str]:
    if any("{dir}" in part for part in devlint):
        return None
    try:
        proc = subprocess.run(devlint + ["--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    out = (proc.stdout or proc.stderr).strip()
    first = out.splitlines()[0] if proc.returncode == 0 and out else ""
    return first if first.startswith("devlint") else None


def missed_targets(results: List[dict], total: Optional[dict]) -> List[str]:
    missed = []
    ok = [r for r in results if not r["failed"]]
    for r in ok + ([total] if total and len(results) > 1 else []):
        if r["errors"] > TARGET_ERRORS:
            missed.append(f"{r['name']}: {r['errors']} error(s)")
        rate = r["warnings_per_5k_lines"]
        if rate is not None and rate > TARGET_WARNINGS_PER_5K:
            missed.append(f"{r['name']}: {rate:.2f} warnings per {PER_LINES:,} lines")
    return missed


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    devlint = absolute_command(shlex.split(args.devlint)) if args.devlint else default_devlint()
    if not devlint:
        print("error: devlint not found on PATH nor next to sys.executable; pass --devlint CMD",
              file=sys.stderr)
        return 2
    extra = shlex.split(args.extra_args)

    results = []
    for folder in args.folders:
        result = check_base(folder, read_version(folder, args.versions), devlint, extra, args.timeout)
        if result["failed"]:
            bar = "!" * 72
            print(f"{bar}\n!! devlint FAILED on {folder}: {result['failed']}\n"
                  f"!! command: {shlex.join(result['command'])}\n"
                  f"!! end of stderr:\n{result['stderr_tail'] or '(empty)'}\n{bar}",
                  file=sys.stderr, flush=True)
        results.append(result)
    total = totals(results)

    version = devlint_version(devlint)
    print(f"# devlint on correct code ({version or shlex.join(devlint)}, "
          f"{time.strftime('%Y-%m-%d')})")
    print()
    print_table(results, total)
    print()
    print(f"Targets: {TARGET_ERRORS} errors; at most {TARGET_WARNINGS_PER_5K:g} warning per "
          f"{PER_LINES:,} lines. Lines are physical lines of the .py files checked.")
    print_findings(results, args.show_infos, not args.no_source)

    missed = missed_targets(results, total)
    if args.json:
        meta = {
            "devlint_version": version,
            "devlint_command": devlint + DEVLINT_CHECK_ARGS + extra,
            "corpus": str(Path(args.corpus).resolve()),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "per_lines": PER_LINES,
            "targets": {"errors": TARGET_ERRORS, "warnings_per_5k_lines": TARGET_WARNINGS_PER_5K},
            "missed_targets": missed,
            "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"meta": meta, "total": total, "code_bases": results}, fh, indent=2)
            fh.write("\n")
    if any(r["failed"] for r in results):
        return 1
    if args.check_targets and missed:
        print("\nMissed targets: " + "; ".join(missed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
