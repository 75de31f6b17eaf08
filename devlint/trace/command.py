"""`devlint trace`: run a program under the tracer, write its JSON report, summarise it."""
from __future__ import annotations

import importlib.util
import os
import sys
from typing import Dict, List, Optional, Sequence

from ..config import find_config, load_settings
from ..confirm import confirm, format_unpredicted, load_trace
from ..diagnostics import Diagnostic
from ..discovery import collect_files
from ..report.text import format_text
from ..runner import check_files
from ..selection import enabled_codes, ignored_for
from . import INSTALL_HINT


def trace_command(target: Sequence[str], out: str, simulate_gpus: int, keep_going: bool,
                  root: Optional[str], check: bool = False) -> int:
    """Returns the program's exit status, as `python` would; 2 when nothing could run.
    The static findings of the program's folder are found first: the run reports which of
    their lines ran, so that `--confirm` can tell a contradicted finding from one not reached."""
    if importlib.util.find_spec("torch") is None:
        sys.stderr.write(f"devlint: error: {INSTALL_HINT}\n")
        return 2
    from .runner import run_module, run_script

    if target[0] == "-m":
        if len(target) < 2:
            sys.stderr.write("devlint: error: -m needs a module name\n")
            return 2
        folder = root or os.getcwd()
        findings = static_findings(folder)
        report = run_module(target[1], target[2:], simulate_gpus, keep_going, root, watched_lines(findings))
    else:
        if not os.path.isfile(target[0]):
            sys.stderr.write(f"devlint: error: no such file: {target[0]}\n")
            return 2
        findings = static_findings(root or os.path.dirname(os.path.abspath(target[0])))
        report = run_script(target[0], target[1:], simulate_gpus, keep_going, root, watched_lines(findings))
    try:
        with open(out, "w", encoding="utf-8") as handle:
            handle.write(report.to_json() + "\n")
    except OSError as error:
        sys.stderr.write(f"devlint: error: cannot write {out}: {error.strerror or error}\n")
        return 2
    sys.stderr.write(summary(report, out))
    if check:
        sys.stderr.write(confirmation(findings, out))
    return report.exit_status


def static_findings(folder: str) -> List[Diagnostic]:
    """What `devlint check FOLDER` reports, with the folder's own settings."""
    settings = load_settings(find_config([folder]))
    files = collect_files([folder], settings)
    enabled = enabled_codes(settings)
    return check_files([(path, enabled - ignored_for(path, settings), None) for path in files], processes=1)


def watched_lines(findings: List[Diagnostic]) -> Dict[str, List[int]]:
    lines: Dict[str, List[int]] = {}
    for finding in findings:
        lines.setdefault(finding.path, []).extend(range(finding.line, finding.end_line + 1))
    return lines


def confirmation(findings: List[Diagnostic], trace_file: str) -> str:
    events, reached = load_trace(trace_file)
    marked, unpredicted = confirm(findings, events, reached)
    return format_text([d for d in marked if d.trace is not None]) + format_unpredicted(unpredicted)


def summary(report, out: str) -> str:
    where = f"{report.gpus} simulated GPU(s)" if report.mode == "simulated" else f"{report.gpus} GPU(s)"
    lines = [f"devlint trace: ran on {where}; exit status {report.exit_status}"]
    if report.exception is not None:
        failure = report.exception
        lines.append(f"  stopped by {failure.type} at {failure.file}:{failure.line}: {failure.message}")
    for event in report.events:
        times = f" (x{event.count})" if event.count > 1 else ""
        lines.append(f"  {event.file}:{event.line}: {event.kind}{times}: {event.message}")
    lines.append(f"report written to {out}")
    return "\n".join(lines) + "\n"
