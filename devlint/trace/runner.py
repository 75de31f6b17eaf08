"""Run a program as `python prog.py` / `python -m mod` would, under the tracer.

torch is imported only when a run starts, so importing this module is cheap
and the static linter never needs torch.
"""
from __future__ import annotations

import os
import runpy
import sys
from typing import Callable, Dict, Iterable, Sequence

from .coverage import LineWatch
from .events import Recorder
from .report import Failure, Report

Watched = Dict[str, Iterable[int]]


def run_script(path: str, argv: Sequence[str] = (), simulate_gpus: int = 2,
               keep_going: bool = False, root: str | None = None, watch: Watched | None = None) -> Report:
    """`watch`: lines (by file) to report as reached or not, e.g. the static findings'."""
    path = os.path.abspath(path)
    return _run(lambda: runpy.run_path(path, run_name="__main__"),
                [path, *argv], os.path.dirname(path),
                simulate_gpus, keep_going, root, watch)


def run_module(name: str, argv: Sequence[str] = (), simulate_gpus: int = 2,
               keep_going: bool = False, root: str | None = None, watch: Watched | None = None) -> Report:
    # runpy puts the module's file in sys.argv[0], as `python -m` does.
    return _run(lambda: runpy.run_module(name, run_name="__main__", alter_sys=True),
                [name, *argv], os.getcwd(), simulate_gpus, keep_going, root, watch)


def _run(call: Callable[[], object], argv: list[str], path0: str,
         simulate_gpus: int, keep_going: bool, root: str | None, watch: Watched | None) -> Report:
    import torch

    from .realgpu import RealTracing
    from .simulate import Simulation

    recorder = Recorder(root)
    if torch.cuda.is_available():
        tracer, mode, gpus = RealTracing(recorder, keep_going), "cuda", torch.cuda.device_count()
    else:
        tracer, mode, gpus = Simulation(simulate_gpus, recorder, keep_going), "simulated", simulate_gpus

    saved_argv, saved_path, saved_cwd = sys.argv, list(sys.path), os.getcwd()
    saved_modules = set(sys.modules)
    sys.argv = list(argv)
    sys.path.insert(0, path0)
    status, failure = 0, None
    lines = LineWatch(watch or {})
    try:
        with tracer, lines:
            call()
    except SystemExit as e:
        status = _exit_status(e.code)
    except Exception as e:  # the program's own failure is the result, not ours
        status, failure = 1, failure_of(e, recorder.filter)
    finally:
        sys.argv = saved_argv
        sys.path[:] = saved_path
        os.chdir(saved_cwd)
        _forget_modules_from(path0, saved_modules)
    return Report(mode=mode, gpus=gpus, exit_status=status, exception=failure,
                  events=recorder.events(), reached=lines.as_dict())


def _exit_status(code) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)  # what the interpreter does with sys.exit("msg")
    return 1


def failure_of(exc: BaseException, frame_filter) -> Failure:
    """The exception at its innermost user line, with the user lines that led there."""
    frames = []
    tb = exc.__traceback__
    while tb is not None:  # the user's frames, outermost first
        if frame_filter.is_user(tb.tb_frame.f_code):
            frames.append((tb.tb_frame.f_code.co_filename, tb.tb_lineno))
        tb = tb.tb_next
    if not frames:
        return Failure(type(exc).__name__, str(exc), None, None)
    file, line = frames[-1]
    return Failure(type(exc).__name__, str(exc), file, line, callers=frames[-2::-1])


def _forget_modules_from(directory: str, keep: set) -> None:
    """Drops modules the program imported from its own directory, so a second
    run in this process imports them afresh."""
    prefix = os.path.join(os.path.realpath(directory), "")
    for name in [n for n in sys.modules if n not in keep]:
        file = getattr(sys.modules[name], "__file__", None)
        if file and os.path.realpath(file).startswith(prefix):
            del sys.modules[name]
