"""The pytest plugin: `pytest --devlint-trace` runs a test suite on simulated GPUs and tags events with test ids."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.skipif(torch.cuda.is_available(),
                                reason="these check the simulation; a real GPU is present")

SUITE = """
    import torch, torch.nn as nn

    DEVICE = "cuda" if torch.cuda.is_available() else "cpu"

    def test_forgot_the_batch():
        model = nn.Linear(4, 2).to(DEVICE)
        x = torch.randn(8, 4)
        assert model(x).shape == (8, 2)  # MISMATCH

    def test_moves_the_batch():
        model = nn.Linear(4, 2).to(DEVICE)
        x = torch.randn(8, 4).to(DEVICE)
        assert model(x).device.type == DEVICE

    def test_item_in_a_loop():
        w = torch.ones(3, device=DEVICE)
        total = 0.0
        for _ in range(5):
            total += (w * 2).sum().item()  # SYNC
        assert total == 30.0
"""


def line_of(path, marker: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if marker in line)


@pytest.fixture
def suite(pytester):
    # In a subprocess: the tracer imports torch and patches it; the outer session stays untouched.
    pytester.makepyfile(test_suite=textwrap.dedent(SUITE))
    return pytester


def test_without_the_option_the_suite_passes_on_the_cpu(suite):
    result = suite.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)
    assert not (suite.path / "devlint-trace.json").exists()


def test_traced_suite_fails_the_mismatched_test_and_tags_events(suite):
    result = suite.runpytest_subprocess("--devlint-trace", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*Expected all tensors to be on the same device*",
                                 "FAILED test_suite.py::test_forgot_the_batch*"])
    report = json.loads((suite.path / "devlint-trace.json").read_text())
    assert (report["mode"], report["gpus"], report["exit_status"]) == ("simulated", 2, 1)
    by_kind = {}
    for event in report["events"]:
        by_kind.setdefault(event["kind"], []).append(event)
    [mismatch] = by_kind["device-mismatch"]
    assert mismatch["tests"] == ["test_suite.py::test_forgot_the_batch"]
    assert mismatch["line"] == line_of(suite.path / "test_suite.py", "MISMATCH")
    [sync] = by_kind["host-sync"]
    assert (sync["line"], sync["count"]) == (line_of(suite.path / "test_suite.py", "SYNC"), 5)
    assert sync["tests"] == ["test_suite.py::test_item_in_a_loop"]
    tests = report["tests"]
    assert tests["test_suite.py::test_moves_the_batch"] == {"outcome": "passed", "exception": None}
    failure = tests["test_suite.py::test_forgot_the_batch"]
    assert failure["outcome"] == "failed"
    assert failure["exception"]["type"] == "RuntimeError"
    assert failure["exception"]["message"].startswith("Expected all tensors to be on the same device")
    assert failure["exception"]["line"] == line_of(suite.path / "test_suite.py", "MISMATCH")


def test_out_file_and_gpu_count(suite):
    suite.makepyfile(test_gpus="""
        import torch
        def test_count():
            assert torch.cuda.device_count() == 3
            assert torch.ones(1, device="cuda:2").device.index == 2
    """)
    result = suite.runpytest_subprocess("--devlint-trace=out.json", "--devlint-simulate-gpus", "3",
                                        "test_gpus.py", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    report = json.loads((suite.path / "out.json").read_text())
    assert report["gpus"] == 3 and report["tests"]["test_gpus.py::test_count"]["outcome"] == "passed"


def test_a_test_path_after_the_bare_option_is_refused(suite):
    result = suite.runpytest_subprocess("--devlint-trace", "test_suite.py")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--devlint-trace takes its file with '='*"])


def test_the_plugin_imports_no_torch_without_the_option(tmp_path):
    (tmp_path / "test_plain.py").write_text(
        "import sys\n\ndef test_plain(pytestconfig):\n"
        "    assert pytestconfig.pluginmanager.hasplugin('devlint')  # loaded, from the entry point\n"
        "    assert 'torch' not in sys.modules\n")
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_plain.py"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
