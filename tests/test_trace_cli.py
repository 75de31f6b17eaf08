"""`devlint trace` from the command line, on the bundled demo, with a simulated GPU."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "examples" / "train_demo.py"


def trace(*args, cwd):
    return subprocess.run([sys.executable, "-m", "devlint", "trace", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300)


def test_the_demo_crashes_at_its_first_mismatch_on_a_simulated_gpu(tmp_path):
    result = trace("--out", "trace.json", str(DEMO), cwd=tmp_path)
    report = json.loads((tmp_path / "trace.json").read_text())
    assert result.returncode == 1 and report["exit_status"] == 1
    assert (report["mode"], report["gpus"]) == ("simulated", 2)
    assert report["exception"]["type"] == "RuntimeError"
    assert "Expected all tensors to be on the same device" in report["exception"]["message"]
    assert report["exception"]["line"] == 25  # SmallConvNet.forward, fed a CPU batch
    assert "Traceback" not in result.stderr


def test_continue_records_every_problem_in_one_run(tmp_path):
    result = trace("--continue", "--out", "trace.json", str(DEMO), cwd=tmp_path)
    report = json.loads((tmp_path / "trace.json").read_text())
    assert result.returncode == 0 and "accuracy:" in result.stdout
    found = {(event["kind"], event["line"]) for event in report["events"]}
    assert {("device-mismatch", 25), ("device-mismatch", 27), ("device-mismatch", 49),
            ("host-sync", 53), ("numpy-on-accelerator", 59)} <= found
    assert "ran on 2 simulated GPU(s)" in result.stderr


def test_trace_needs_a_program(tmp_path):
    result = trace(cwd=tmp_path)
    assert result.returncode == 2 and "trace needs a program" in result.stderr
    missing = trace("nowhere.py", cwd=tmp_path)
    assert missing.returncode == 2 and "no such file" in missing.stderr
