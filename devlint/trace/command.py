"""`devlint trace`: run a program under the tracer, write its JSON report, summarise it."""
from __future__ import annotations

import importlib.util
import os
import sys
from typing import Optional, Sequence

INSTALL_HINT = "devlint trace needs PyTorch; install it with: pip install 'devlint[trace]'"


def trace_command(target: Sequence[str], out: str, simulate_gpus: int, keep_going: bool,
                  root: Optional[str]) -> int:
    """Returns the program's exit status, as `python` would; 2 when nothing could run."""
    if importlib.util.find_spec("torch") is None:
        sys.stderr.write(f"devlint: error: {INSTALL_HINT}\n")
        return 2
    from .runner import run_module, run_script

    if target[0] == "-m":
        if len(target) < 2:
            sys.stderr.write("devlint: error: -m needs a module name\n")
            return 2
        report = run_module(target[1], target[2:], simulate_gpus, keep_going, root)
    else:
        if not os.path.isfile(target[0]):
            sys.stderr.write(f"devlint: error: no such file: {target[0]}\n")
            return 2
        report = run_script(target[0], target[1:], simulate_gpus, keep_going, root)
    try:
        with open(out, "w", encoding="utf-8") as handle:
            handle.write(report.to_json() + "\n")
    except OSError as error:
        sys.stderr.write(f"devlint: error: cannot write {out}: {error.strerror or error}\n")
        return 2
    sys.stderr.write(summary(report, out))
    return report.exit_status


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
