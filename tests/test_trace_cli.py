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


def test_confirm_marks_each_finding_with_what_the_run_showed(tmp_path):
    work = tmp_path / "demo"
    work.mkdir()
    (work / "train_demo.py").write_bytes(DEMO.read_bytes())
    first = trace("--out", "first.json", "train_demo.py", cwd=work)  # stops at the first mismatch
    assert first.returncode == 1
    checked = subprocess.run([sys.executable, "-m", "devlint", "check", "--no-cache", "--output-format", "json",
                              "--confirm", "first.json", "train_demo.py"], cwd=work, capture_output=True, text=True)
    status = {(d["code"], d["line"]): d.get("trace") for d in json.loads(checked.stdout)}
    assert status[("DEV101", 48)] == "confirmed"      # the mismatch in forward, called from line 48
    assert status[("DEV102", 49)] == "not reached"    # the run died before it
    assert status[("DEV106", 59)] == "not reached"
    assert status[("DEV105", 22)] is None             # a rule a run cannot show
    full = trace("--continue", "--check", "--out", "full.json", "train_demo.py", cwd=work)
    assert "train_demo.py:49:20: DEV102" in full.stderr and "[confirmed]" in full.stderr
    assert "Runtime events no finding predicted:" in full.stderr


def test_a_finding_whose_lines_ran_without_its_event_is_contradicted(tmp_path):
    from devlint.confirm import confirm, load_trace
    from devlint.diagnostics import Diagnostic

    program = tmp_path / "p.py"
    program.write_text("x = 1\n")
    (tmp_path / "t.json").write_text(json.dumps({
        "mode": "simulated", "gpus": 2, "exit_status": 0, "exception": None,
        "events": [{"kind": "host-sync", "file": str(program), "line": 9, "count": 3, "message": "m", "callers": []}],
        "reached": {str(program): [1]}}))
    finding = Diagnostic("DEV102", "operand-device-mismatch", "error", "m", str(program), 1, 0, 1, 5)
    marked, unpredicted = confirm([finding], *load_trace(str(tmp_path / "t.json")))
    assert marked[0].trace == "contradicted"
    assert [(event.kind, event.at[1]) for event in unpredicted] == [("host-sync", 9)]


def test_without_torch_trace_says_how_to_install_it(monkeypatch, capsys, tmp_path):
    import importlib.util

    from devlint.trace import command

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real_find_spec(name, *a))
    assert command.trace_command([str(DEMO)], str(tmp_path / "t.json"), 2, False, None) == 2
    assert "pip install 'devlint[trace]'" in capsys.readouterr().err


def test_sarif_carries_the_trace_status(tmp_path):
    work = tmp_path / "demo"
    work.mkdir()
    (work / "train_demo.py").write_bytes(DEMO.read_bytes())
    trace("--continue", "--out", "t.json", "train_demo.py", cwd=work)
    sarif = subprocess.run([sys.executable, "-m", "devlint", "check", "--no-cache", "--output-format", "sarif",
                            "--confirm", "t.json", "train_demo.py"], cwd=work, capture_output=True, text=True)
    results = json.loads(sarif.stdout)["runs"][0]["results"]
    status = {(r["ruleId"], r["locations"][0]["physicalLocation"]["region"]["startLine"]):
              r.get("properties", {}).get("traceStatus") for r in results}
    assert status[("DEV101", 48)] == status[("DEV102", 49)] == status[("DEV106", 59)] == "confirmed"


def test_mixed_precision_runs_under_simulation(tmp_path):
    program = tmp_path / "amp.py"
    program.write_text(
        "import torch\nfrom torch import nn\n"
        'device = "cuda" if torch.cuda.is_available() else "cpu"\n'
        "model = nn.Linear(8, 2).to(device)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        'scaler = torch.amp.GradScaler("cuda")\nx = torch.randn(4, 8, device=device)\n'
        "for _ in range(3):\n"
        '    with torch.autocast(device_type="cuda", dtype=torch.float16):\n'
        "        loss = model(x).float().pow(2).mean()\n"
        "    scaler.scale(loss).backward()\n    scaler.step(opt)\n    scaler.update()\n    opt.zero_grad()\n"
        "print(loss.device)\n")
    result = trace("--out", "t.json", str(program), cwd=tmp_path)
    assert result.returncode == 0 and result.stdout.strip() == "cuda:0", result.stderr
