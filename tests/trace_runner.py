"""Runs fixture programs under the tracer's simulated GPUs, fast: torch is imported once, each program runs in a fork.

Started by `tests/test_trace_fixtures.py`. One request per line on stdin, `{"path": ..., "timeout": ..., "lines": bool}`;
one answer per line on stdout: `{"timed_out": bool, "exit_status": ..., "exception": [type, message] or null,
"events": [[kind, file, line], ...], "frames": [[file, line], ...], "ran": [line, ...], "output": ...}`.

`frames` are the user frames of the traceback that ended the run, outermost first: the Report keeps only
the innermost, and a mismatch inside `forward` is caused by the call of the model several frames out.
`ran` (with "lines") are the lines of the program's own file that ran before it ended: some rules report
the cause (a DataParallel built with the wrong device_ids) rather than the line that crashes later.
"""
from __future__ import annotations

import json
import os
import runpy
import sys
import tempfile
import threading
import traceback

import torch

from program_runner import OUTPUT_TAIL, exit_status, isolate_child, shorten_data_loaders, wait, warm_up

from devlint.trace.events import Recorder
from devlint.trace.simulate import Simulation


def line_tracer(path: str, ran: set):
    """A sys.settrace function that notes the lines run in `path` only."""
    def local(frame, event, arg):
        if event == "line":
            ran.add(frame.f_lineno)
        return local

    def calls(frame, event, arg):
        return local if frame.f_code.co_filename == path else None
    return calls


def traced(path: str, lines: bool) -> dict:
    """What `runner.run_script` reports, plus the failure's traceback; built on Simulation directly, since
    nothing needs restoring in a fork."""
    root = os.path.dirname(path)  # only the fixture's own frames are the user's, not this file's
    recorder = Recorder(root)
    ran: set = set()
    sys.argv, sys.path[0] = [path], root
    status, error = 0, None
    try:
        with Simulation(2, recorder, keep_going=False):
            if lines:
                tracer = line_tracer(path, ran)
                sys.settrace(tracer)
                threading.settrace(tracer)
            runpy.run_path(path, run_name="__main__")
    except SystemExit as exit_:
        status = exit_status(exit_)
    except Exception as caught:  # the program's failure is the result
        status, error = 1, caught
    finally:
        sys.settrace(None)
    frames = []
    if error is not None:
        frames = [[frame.f_code.co_filename, line] for frame, line in traceback.walk_tb(error.__traceback__)
                  if recorder.filter.is_user(frame.f_code)]
    return {"exit_status": status, "events": [[e.kind, e.file, e.line] for e in recorder.events()],
            "exception": None if error is None else [type(error).__name__, str(error)],
            "frames": frames, "ran": sorted(ran)}


def run_child(path: str, lines: bool, workdir: str, log: str, result: str) -> None:
    """In the forked child: trace the program, write the result, never return."""
    isolate_child(log)
    status = 1
    try:
        os.chdir(workdir)
        shorten_data_loaders()
        data = traced(path, lines)
        with open(result, "w", encoding="utf-8") as handle:
            json.dump(data, handle)
        status = 0
    except BaseException:  # noqa: BLE001 - a tracer failure is shown in the output
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)


def run(path: str, timeout: float, lines: bool) -> dict:
    with tempfile.TemporaryDirectory(prefix="fixture-trace-") as scratch:
        workdir = os.path.join(scratch, "cwd")
        log, result = os.path.join(scratch, "output.log"), os.path.join(scratch, "result.json")
        os.mkdir(workdir)
        pid = os.fork()
        if pid == 0:
            run_child(path, lines, workdir, log, result)
        rc = wait(pid, timeout)
        with open(log, encoding="utf-8", errors="replace") as file:
            output = file.read()[-OUTPUT_TAIL:]
        answer = {"timed_out": rc is None, "rc": rc, "output": output, "exit_status": None, "frames": [], "ran": []}
        if os.path.exists(result):
            with open(result, encoding="utf-8") as handle:
                answer.update(json.load(handle))
    return answer


def main() -> None:
    torch.set_num_threads(1)
    warm_up()
    for line in sys.stdin:
        request = json.loads(line)
        print(json.dumps(run(request["path"], request["timeout"], request.get("lines", False))), flush=True)


if __name__ == "__main__":
    main()
