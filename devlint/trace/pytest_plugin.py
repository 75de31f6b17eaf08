"""A pytest plugin that runs a test session under the tracer.

    pytest --devlint-trace                 # writes devlint-trace.json
    pytest --devlint-trace=out.json --devlint-simulate-gpus 4

One simulation (or real-GPU tracing, where CUDA is available) spans the whole
session, collection included: test modules that pick their device at import
time (`"cuda" if torch.cuda.is_available() else "cpu"`) see the simulated GPUs.
A device mismatch raises in the test that made it, so that test fails with
PyTorch's own message.

The JSON file has the usual report shape (mode, gpus, exit_status, exception,
events) plus:
  - "tests" on every event: the node ids of the tests that produced it, in
    the order they did (empty for events outside any test, e.g. at import);
  - a top-level "tests" map: node id -> {"outcome", "exception"}, where
    "exception" is {type, message, file, line, callers} for a failed test, else null.

Under pytest-xdist each worker traces its own tests and writes
`<name>.<worker id>.json`; the controller writes nothing.

Without --devlint-trace the plugin does nothing and imports no torch.
"""
from __future__ import annotations

import importlib.util
import json
import os
from typing import Optional

import pytest

from . import INSTALL_HINT
from .events import Recorder  # no torch there
from .runner import failure_of

DEFAULT_OUT = "devlint-trace.json"


def pytest_addoption(parser) -> None:
    group = parser.getgroup("devlint", "devlint runtime tracer")
    group.addoption("--devlint-trace", nargs="?", const=DEFAULT_OUT, default=None, metavar="OUT.json",
                    dest="devlint_trace",
                    help=f"trace device placement while the tests run; write the report to OUT.json "
                         f"(default {DEFAULT_OUT}; give it with '=')")
    group.addoption("--devlint-simulate-gpus", type=int, default=2, metavar="N", dest="devlint_simulate_gpus",
                    help="simulated GPUs when no real one is present (default 2)")


def pytest_configure(config) -> None:
    out = config.getoption("devlint_trace")
    if out is None:
        return
    # nargs="?" would swallow a test path written after the option without '='.
    if not out.endswith(".json") and (os.path.exists(out) or "::" in out):
        raise pytest.UsageError(f"--devlint-trace takes its file with '=': --devlint-trace=OUT.json (got {out!r})")
    if config.getoption("devlint_simulate_gpus") < 1:
        raise pytest.UsageError("--devlint-simulate-gpus must be at least 1")
    if importlib.util.find_spec("torch") is None:
        raise pytest.UsageError(INSTALL_HINT)
    if getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput"):
        return  # the xdist controller runs no tests
    worker = getattr(config, "workerinput", {}).get("workerid")
    if worker:
        stem, ext = os.path.splitext(out)
        out = f"{stem}.{worker}{ext}"
    config.pluginmanager.register(SessionTracer(config, os.path.abspath(out)), "devlint-trace-session")


class SessionTracer:
    def __init__(self, config, out: str):
        self.config = config
        self.out = out
        self.tracer = None
        self.recorder = None
        self.tests: dict = {}  # node id -> {"outcome", "exception"}

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session) -> None:
        import torch  # only now: the option was given

        from .realgpu import RealTracing
        from .simulate import Simulation

        self.recorder = _TestRecorder(str(self.config.rootpath))
        if torch.cuda.is_available():
            self.tracer = RealTracing(self.recorder, keep_going=False)
            self.mode, self.gpus = "cuda", torch.cuda.device_count()
        else:
            n = self.config.getoption("devlint_simulate_gpus")
            self.tracer = Simulation(n, self.recorder, keep_going=False)
            self.mode, self.gpus = "simulated", n
        self.tracer.__enter__()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        self.recorder.current = item.nodeid
        self.tests[item.nodeid] = {"outcome": "passed", "exception": None}
        try:
            yield
        finally:
            # Loop counts belong to the test whose loop made them.
            if self.tracer.mode is not None:
                self.tracer.mode.flush_loop_counts()
            self.recorder.current = None

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        report = outcome.get_result()
        entry = self.tests.get(item.nodeid)
        if entry is None or report.passed:
            return
        if report.skipped:
            if entry["outcome"] == "passed":
                entry["outcome"] = "skipped"
            return
        entry["outcome"] = "failed" if report.when == "call" else "error"
        if call.excinfo is not None and entry["exception"] is None:
            entry["exception"] = failure_of(call.excinfo.value, self.recorder.filter).as_dict()

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session, exitstatus) -> None:
        if self.tracer is None:
            return
        self.tracer.__exit__(None, None, None)
        self.tracer = None
        from .report import Report

        report = Report(mode=self.mode, gpus=self.gpus, exit_status=int(exitstatus),
                        events=self.recorder.events()).as_dict()
        for event in report["events"]:
            event["tests"] = self.recorder.tests_of(event["kind"], event["file"], event["line"])
        report["tests"] = self.tests
        with open(self.out, "w", encoding="utf-8") as handle:
            json.dump(report, handle, indent=2)
            handle.write("\n")

    def pytest_terminal_summary(self, terminalreporter) -> None:
        terminalreporter.write_line(f"devlint trace: report written to {self.out}")


class _TestRecorder(Recorder):
    """A Recorder that also notes which test each event came from."""

    def __init__(self, root: Optional[str] = None):
        super().__init__(root)
        self.current: Optional[str] = None
        self._tests: dict = {}

    def record_at(self, kind, file, line, *args, **kwargs):
        super().record_at(kind, file, line, *args, **kwargs)
        if self.current is not None:
            tests = self._tests.setdefault((kind, file, line), [])
            if self.current not in tests:
                tests.append(self.current)

    def tests_of(self, kind, file, line) -> list:
        return list(self._tests.get((kind, file, line), ()))
