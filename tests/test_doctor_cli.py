"""`devlint doctor` as a user runs it: on this machine for real, and its error paths."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from devlint.doctor import command as doctor_command_module
from devlint.doctor.model import SKIPPED, WARN
from devlint.doctor.probes import SubprocessTorch

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = json.loads((ROOT / "docs" / "doctor-schema.json").read_text(encoding="utf-8"))


def devlint(*args, env=None):
    return subprocess.run([sys.executable, "-m", "devlint", "doctor", *args], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=300)


def no_gpu_here():
    return shutil.which("nvidia-smi") is None and not os.path.exists("/dev/nvidia0") and not os.path.exists("/dev/kfd")


@pytest.fixture(scope="module")
def real_report():
    torch = pytest.importorskip("torch")
    if torch.version.cuda or torch.version.hip:
        pytest.skip("the test requirements pin a CPU-only torch; this one is a GPU build")
    done = devlint("--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def check(report, check_id):
    return next(c for c in report["checks"] if c["id"] == check_id)


def test_this_machine_is_diagnosed_as_cpu_only_build(real_report):
    framework = check(real_report, "framework")
    assert framework["status"] == WARN
    assert "is a CPU-only build" in framework["summary"] and "+cpu" in framework["summary"]
    assert "--index-url https://download.pytorch.org/whl/cu" in framework["remedy"]
    assert real_report["accelerator"] == {"usable": False, "kind": None, "devices": []}


@pytest.mark.skipif(not no_gpu_here(), reason="this machine has GPU tooling")
def test_this_machine_is_diagnosed_as_having_no_gpu(real_report):
    hardware = check(real_report, "hardware")
    assert hardware["status"] == WARN and "GPU" in hardware["summary"]
    assert real_report["first_problem"] == "hardware"
    assert check(real_report, "driver")["status"] == SKIPPED
    assert check(real_report, "proof")["status"] == SKIPPED


def test_the_report_follows_the_documented_schema(real_report):
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(real_report, SCHEMA)
    assert real_report["observations"]["torch"]["stage"] == "done"


def test_the_recording_replays_to_the_same_report(real_report, tmp_path):
    recording = tmp_path / "machine.json"
    recording.write_text(json.dumps(real_report), encoding="utf-8")
    replayed = devlint("--json", "--replay", str(recording))
    assert replayed.returncode == 0, replayed.stderr
    assert json.loads(replayed.stdout)["checks"] == real_report["checks"]


def test_text_report_and_exit_statuses():
    pytest.importorskip("torch")
    plain = devlint()
    assert "CPU-only build" in plain.stdout and "No accelerator is usable" in plain.stdout
    if no_gpu_here():
        assert plain.returncode == 0  # no GPU hardware: a warning, not a failure
        assert [line for line in plain.stdout.splitlines() if line.startswith(">")][0].startswith("> warn  GPU hardware")
    required = devlint("--require-accelerator")
    assert required.returncode == 1 and required.stdout == plain.stdout


def test_the_schema_accepts_every_recording_report():
    jsonschema = pytest.importorskip("jsonschema")
    for recording in sorted((ROOT / "tests" / "doctor_recordings").glob("*.json")):
        done = devlint("--json", "--replay", str(recording))
        assert done.returncode in (0, 1), (recording, done.stderr)
        jsonschema.validate(json.loads(done.stdout), SCHEMA)


@pytest.mark.parametrize("args, message", [
    (["--replay", "no-such-file.json"], "cannot read no-such-file.json: No such file"),
    (["--python", "/no/such/python"], "no such Python interpreter: /no/such/python"),
])
def test_bad_arguments_are_one_line_errors(args, message):
    done = devlint(*args)
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("content, message", [("{not json", "is not JSON"), ("[1, 2]", "a recording is a JSON object"),
                                              ('{"observations": {"commands": []}}', "observations.commands")])
def test_bad_recordings_are_one_line_errors(tmp_path, content, message):
    recording = tmp_path / "bad.json"
    recording.write_text(content, encoding="utf-8")
    done = devlint("--replay", str(recording))
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr


def test_an_internal_error_is_exit_2_with_the_cause(monkeypatch, capsys):
    def broken(probes):
        raise KeyError("boom")

    monkeypatch.setattr(doctor_command_module, "diagnose", broken)
    assert doctor_command_module.doctor_command(replay_file=str(ROOT / "tests/doctor_recordings/cpu_laptop.json")) == 2
    assert "internal error: KeyError" in capsys.readouterr().err


def fake_python(tmp_path, body):
    script = tmp_path / "python"
    script.write_text("#!/bin/sh\n" + body + "\n", encoding="utf-8")
    script.chmod(0o755)
    return str(script)


@pytest.mark.skipif(sys.platform == "win32", reason="uses a shell script as the interpreter")
def test_an_interpreter_without_torch(tmp_path):
    python = fake_python(tmp_path, f'exec "{sys.executable}" -S "$@"')  # -S: no site-packages, so no torch
    snapshot = SubprocessTorch(python).snapshot()
    assert snapshot["installed"] is False and snapshot["stage"] == "done"
    done = devlint("--python", python)
    assert f"PyTorch is not installed for {sys.executable}" in done.stdout
    assert "--python /path/to/env/bin/python" in done.stdout and done.returncode == 1


@pytest.mark.skipif(sys.platform == "win32", reason="uses a shell script as the interpreter")
def test_a_probe_that_crashes_is_a_failing_check_not_a_crash(tmp_path):
    python = fake_python(tmp_path, "kill -SEGV $$")
    snapshot = SubprocessTorch(python).snapshot()
    assert "killed by signal 11" in snapshot["probe_error"]
    done = devlint("--python", python)
    assert "could not ask PyTorch: the PyTorch probe was killed by signal 11" in done.stdout and done.returncode == 1
