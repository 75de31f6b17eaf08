"""Runs fixture programs as `__main__`, fast: torch is imported once here and each program runs in a fork.

Started by `tests/test_fixed_run.py`. It reads one request per line on stdin,
`{"path": ..., "timeout": ...}`, and answers one line on stdout,
`{"rc": <exit status, or null on timeout>, "seconds": ..., "output": <tail of the program's output>}`.

Each program runs in a fresh temporary directory, with `sys.argv == [path]` and one
thread. Every DataLoader pass stops after MAX_BATCHES batches and loads in the same
process: a training script then runs each line of its loops in seconds, which is all
this check needs (on a CPU-only machine every tensor is on the CPU anyway; what can
break is the Python, not the placement).
"""
from __future__ import annotations

import itertools
import json
import os
import runpy
import signal
import sys
import tempfile
import time
import traceback
import warnings

import torch
from torch.utils.data import DataLoader, TensorDataset

MAX_BATCHES = 2
OUTPUT_TAIL = 3000


def warm_up() -> None:
    """Load once, before forking, what torch imports on first use (an optimizer pulls in torch._dynamo: seconds)."""
    model = torch.nn.Linear(2, 1)
    optimizer = torch.optim.Adam(model.parameters())
    for x, y in DataLoader(TensorDataset(torch.zeros(4, 2), torch.zeros(4, 1)), batch_size=2):
        torch.nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()


def shorten_data_loaders() -> None:
    original_iter, original_init = DataLoader.__iter__, DataLoader.__init__

    def short_iter(self):
        return itertools.islice(original_iter(self), MAX_BATCHES)

    def serial_init(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        self.num_workers = 0  # starting worker processes costs more than the two batches

    DataLoader.__iter__, DataLoader.__init__ = short_iter, serial_init


def exit_status(error: SystemExit) -> int:
    """What the interpreter would exit with after `sys.exit(error.code)`."""
    if error.code is None or isinstance(error.code, int):
        return int(error.code or 0)
    print(error.code, file=sys.stderr)
    return 1


def isolate_child(log: str) -> None:
    """A forked child's own process group (the parent kills the whole group on a timeout),
    no stdin (it carries our requests, not the program's input), and output to `log`."""
    os.setpgrp()
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.dup2(fd, 1)
    os.dup2(fd, 2)


def run_child(path: str, workdir: str, log: str) -> None:
    """In the forked child: run the program, never return."""
    isolate_child(log)
    status = 1
    try:
        os.chdir(workdir)
        sys.argv = [path]
        sys.path[0] = os.path.dirname(path)  # as `python path` would
        shorten_data_loaders()
        # without an accelerator every pinned loader warns; noise in a failure's output
        warnings.filterwarnings("ignore", "'pin_memory' argument is set as true but no accelerator")
        runpy.run_path(path, run_name="__main__")
        status = 0
    except SystemExit as error:
        status = exit_status(error)
    except BaseException:  # noqa: BLE001 - report any error as the interpreter would
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)


def wait(pid: int, timeout: float):
    """The child's exit status, or None after killing it at the timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.02)
    os.killpg(pid, signal.SIGKILL)  # the child leads its group: this ends what it started too
    os.waitpid(pid, 0)
    return None


def run(path: str, timeout: float) -> dict:
    with tempfile.TemporaryDirectory(prefix="fixture-run-") as scratch:
        workdir, log = os.path.join(scratch, "cwd"), os.path.join(scratch, "output.log")
        os.mkdir(workdir)
        start = time.monotonic()
        pid = os.fork()
        if pid == 0:
            run_child(path, workdir, log)
        rc = wait(pid, timeout)
        seconds = time.monotonic() - start
        with open(log, encoding="utf-8", errors="replace") as file:
            output = file.read()
    return {"rc": rc, "seconds": round(seconds, 2), "output": output[-OUTPUT_TAIL:]}


def main() -> None:
    torch.set_num_threads(1)  # pytest -n 2 already keeps both cores busy
    warm_up()
    for line in sys.stdin:
        request = json.loads(line)
        print(json.dumps(run(request["path"], request["timeout"])), flush=True)


if __name__ == "__main__":
    main()
