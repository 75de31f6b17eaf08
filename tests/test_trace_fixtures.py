"""Fixture truth by execution: a fixture that claims a crash on an accelerator crashes there under simulated GPUs.

Every single-file fixture under `fixtures/placement` and `fixtures/parallel` with a `# expect:` line whose rule
(DEV1xx, DEV2xx) has severity "error" runs as `__main__` under the tracer with two simulated GPUs, stopping at the
first failure. The run must end with a device error (PyTorch's mismatch text, DataParallel's placement text, the
numpy TypeError, or a recorded device-mismatch / numpy-on-accelerator event) raised at an expected line or in a call
made from one. A few rules report the cause rather than the crash (see CAUSE_CODES: a discarded move, a plain tensor
attribute, a GPU other than device_ids[0], optimizer state on the CPU): for them the expected line must
have run before the device error.

Its `.fixed.py` twin runs clean (exit 0, no mismatch event) unless devlint still finds a crash-class bug in the twin
(a bug with no automatic fix): then the twin must crash at one of those lines instead.

Skipped with their reason: `# fixture-run: skip (...)` (the program cannot run here at all) and
`# fixture-trace: skip (...)` (it runs, but the failure cannot be observed in a simulated run).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

from devlint.engine import check_text  # noqa: E402
from devlint.rules import RULES_BY_CODE  # noqa: E402
from fixture_support import FIXTURES, enabled_for, expectations  # noqa: E402

RUNNER = Path(__file__).with_name("trace_runner.py")
TIMEOUT = 60
_SKIP = re.compile(r"^#\s*fixture-(?:run|trace):\s*skip\s*\((?P<reason>.+)\)\s*$", re.MULTILINE)
DEVICE_ERROR = re.compile(
    r"Expected all tensors to be on the same device"
    r"|module must have its parameters and buffers on device"
    r"|can't convert cuda:\d+ device type tensor to numpy"
    r"|indices should be either on cpu or on the same device"
    r"|'\w*(?:DataParallel|DistributedDataParallel)' object has no attribute"  # (a wrapper subclass too)
    r"|Error\(s\) in loading state_dict for"
    r"|DistributedDataParallel's input module must be on the same type of devices")
DEVICE_EVENTS = {"device-mismatch", "numpy-on-accelerator"}
# Rules reported where the cause is, not where it crashes: an unregistered tensor attribute crashes where
# forward uses it, a DataParallel with the wrong device_ids at its call, optimizer state built before the
# move at step().
CAUSE_CODES = {"DEV104", "DEV105", "DEV202", "DEV204"}


def crash_lines(pairs) -> dict:
    """{line: code} of the crash-class (DEV1xx/DEV2xx, severity error) pairs."""
    return {line: code for line, code in pairs
            if code[:4] in ("DEV1", "DEV2") and RULES_BY_CODE[code].severity == "error"}


def crash_fixtures() -> list:
    found = []
    for folder in ("placement", "parallel"):
        for path in sorted((FIXTURES / folder).glob("*.py")):
            if not path.name.endswith(".fixed.py") and crash_lines(expectations(path.read_text(encoding="utf-8"))):
                found.append(path)
    return found


FIXTURE_FILES = crash_fixtures()
TWINS = [p.with_name(p.name[:-3] + ".fixed.py") for p in FIXTURE_FILES
         if p.with_name(p.name[:-3] + ".fixed.py").exists()]


def skip_reason(path: Path):
    match = _SKIP.search(path.read_text(encoding="utf-8"))
    return match.group("reason") if match else None


@pytest.fixture(scope="module")
def trace_program():
    """One runner per test process; CUDA is hidden so a GPU machine simulates too."""
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", OMP_NUM_THREADS="1")
    runner = subprocess.Popen([sys.executable, str(RUNNER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True, env=env)

    def run(path: Path, lines: bool) -> dict:
        runner.stdin.write(json.dumps({"path": str(path), "timeout": TIMEOUT, "lines": lines}) + "\n")
        runner.stdin.flush()
        reply = runner.stdout.readline()
        assert reply, "trace_runner.py stopped answering"
        result = json.loads(reply)
        assert not result["timed_out"], f"{path.name} ran past {TIMEOUT} s"
        assert result["exit_status"] is not None, f"the tracer itself failed on {path.name}:\n{result['output']}"
        return result

    yield run
    runner.stdin.close()
    runner.wait(timeout=30)


def observed(result: dict, path: Path) -> tuple:
    """(device error seen?, lines of `path` where it was seen: traceback frames and event lines)."""
    exc = result["exception"]
    events = [line for kind, file, line in result["events"] if kind in DEVICE_EVENTS and file == str(path)]
    seen = bool(events) or bool(exc and DEVICE_ERROR.search(exc[1]))
    lines = {line for file, line in result["frames"] if file == str(path)} if seen else set()
    return seen, lines | set(events)


def describe(result: dict) -> str:
    return (f"exit {result['exit_status']}, exception {result['exception']}, "
            f"traceback lines {[line for _, line in result['frames']]}\n{result['output'][-1500:]}")


def assert_crashes_at(path: Path, expected: dict, result: dict) -> None:
    seen, lines = observed(result, path)
    assert seen, f"{path.name}: no device error under simulation ({describe(result)})"
    if lines & set(expected):
        return
    causes = {line for line, code in expected.items() if code in CAUSE_CODES}
    ran = set(result["ran"]) & causes
    assert ran, (f"{path.name}: device error at lines {sorted(lines)}, none of them expected "
                 f"{sorted(expected)} ({describe(result)})")


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_fixture_crashes_at_an_expected_line(path, trace_program):
    reason = skip_reason(path)
    if reason:
        pytest.skip(reason)
    expected = crash_lines(expectations(path.read_text(encoding="utf-8")))
    assert_crashes_at(path, expected, trace_program(path.resolve(), lines=True))


@pytest.mark.parametrize("twin", TWINS, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_fixed_twin_runs_clean(twin, trace_program):
    reason = skip_reason(twin)
    if reason:
        pytest.skip(reason)
    text = twin.read_text(encoding="utf-8")
    left = crash_lines((d.line, d.code) for d in check_text(text, str(twin), enabled_for(text)))
    result = trace_program(twin.resolve(), lines=bool(left))
    if left:  # a bug the fixer leaves alone still crashes, at its own line
        assert_crashes_at(twin.resolve(), left, result)
        return
    assert result["exit_status"] == 0 and result["exception"] is None, describe(result)
    assert not [e for e in result["events"] if e[0] in DEVICE_EVENTS], result["events"]
