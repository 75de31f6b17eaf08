"""The flake8 plugin, run as users run it: the real flake8, in a subprocess."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from fixture_support import DEFAULT_CODES, FIXTURES, enabled_for, fixture_files

ROOT = Path(__file__).resolve().parent.parent
FAMILIES = ("placement", "parallel", "portability", "hotpath")
WHERE = "%(path)s:%(row)d:%(col)d:%(code)s"
BUGGY = """\
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
x = torch.randn(3)
x.to(device)
y = torch.randn(3, device=device)
z = x + y
"""
MOVE_THEN_WRAP = (FIXTURES / "parallel" / "dev207_to_device_then_dataparallel.py").read_text(encoding="utf-8")


def flake8(*args, cwd):
    # --isolated: no setup.cfg/tox.ini/.flake8 of the machine's or a colleague's leaks in.
    return subprocess.run([sys.executable, "-m", "flake8", "--isolated", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def devlint(*args, cwd):
    return subprocess.run([sys.executable, "-m", "devlint", *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def dev_codes(*args, cwd):
    """The DEV codes flake8 prints, in order (pycodestyle and pyflakes run too without `--select`)."""
    result = flake8("--format", WHERE, *args, cwd=cwd)
    assert "Traceback" not in result.stderr, result.stderr
    return [line.rsplit(":", 1)[-1] for line in result.stdout.splitlines() if ":DEV" in line]


def fixture_groups():
    """Fixtures by the rules they need: each group is one flake8 run and one devlint run."""
    groups = defaultdict(list)
    for path in fixture_files():
        if path.parent.name in FAMILIES:
            groups[enabled_for(path.read_text(encoding="utf-8"))].append(path)
    return [pytest.param(enabled, paths, id="+".join(sorted(enabled - DEFAULT_CODES)) or "default")
            for enabled, paths in sorted(groups.items(), key=lambda item: sorted(item[0]))]


@pytest.mark.parametrize("enabled, paths", fixture_groups())
def test_fixtures_report_what_devlint_reports(enabled, paths):
    files = [str(path.relative_to(ROOT)) for path in paths]
    select = ",".join(sorted(enabled))  # the same exact codes for both: opt-in rules included
    flake8_run = subprocess.Popen([sys.executable, "-m", "flake8", "--isolated", "--select", select,
                                   "--format", WHERE, *files], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    found = devlint("--output-format", "json", "--no-cache", "--select", select, *files, cwd=ROOT)
    printed, _ = flake8_run.communicate(timeout=120)
    expected = {(os.path.normpath(d["path"]), d["line"], d["column"] + 1, d["code"]) for d in json.loads(found.stdout)}
    actual = set()
    for line in printed.splitlines():
        path, row, column, code = line.rsplit(":", 3)
        actual.add((os.path.normpath(path), int(row), int(column), code))
    assert expected, "the fixtures report something, or this test proves nothing"
    assert actual == expected, f"only flake8: {sorted(actual - expected)}\nonly devlint: {sorted(expected - actual)}"


def test_flake8_prints_devlint_messages_and_columns(tmp_path):
    (tmp_path / "buggy.py").write_text(BUGGY)
    found = json.loads(devlint("--output-format", "json", "--no-cache", "buggy.py", cwd=tmp_path).stdout)
    printed = flake8("--select", "DEV", "buggy.py", cwd=tmp_path).stdout.splitlines()
    assert printed == [f"buggy.py:{d['line']}:{d['column'] + 1}: {d['code']} {d['message']}" for d in found]
    assert len(printed) == 2


def test_noqa_is_flake8s(tmp_path):
    (tmp_path / "quiet.py").write_text(BUGGY.replace("x.to(device)\n", "x.to(device)  # noqa: DEV104\n"))
    assert dev_codes("--select", "DEV", "quiet.py", cwd=tmp_path) == ["DEV102"]
    # devlint no longer drops the line itself, so flake8's --disable-noqa brings it back.
    assert dev_codes("--select", "DEV", "--disable-noqa", "quiet.py", cwd=tmp_path) == ["DEV104", "DEV102"]


def test_select_ignore_and_off_by_default_rules(tmp_path):
    (tmp_path / "buggy.py").write_text(BUGGY)
    (tmp_path / "wrap.py").write_text(MOVE_THEN_WRAP)
    assert dev_codes("--select", "DEV", "--ignore", "DEV104", "buggy.py", cwd=tmp_path) == ["DEV102"]
    assert "DEV207" not in dev_codes("wrap.py", cwd=tmp_path)  # plain flake8: off, as in devlint
    assert "DEV207" in dev_codes("--extend-select", "DEV207", "wrap.py", cwd=tmp_path)


def test_tool_devlint_settings_are_read(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.devlint]\nextend-select = ["DEV207"]\n')
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "pyproject.toml").write_text('[tool.devlint]\nignore = ["DEV104"]\n')
    (tmp_path / "pkg" / "buggy.py").write_text(BUGGY)
    (tmp_path / "wrap.py").write_text(MOVE_THEN_WRAP)
    result = flake8("--format", WHERE, "pkg", "wrap.py", cwd=tmp_path)
    by_file = defaultdict(list)
    for line in result.stdout.splitlines():
        path, _, _, code = line.rsplit(":", 3)
        by_file[Path(path).name].append(code)
    # Each file gets the [tool.devlint] nearest to it, as with `devlint`.
    assert [code for code in by_file["buggy.py"] if code.startswith("DEV")] == ["DEV102"]
    # The working directory's config turns on an opt-in rule: plain flake8 needs no flag for it.
    assert "DEV207" in by_file["wrap.py"]


def test_bad_config_is_reported_not_raised(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.devlint]\nselekt = ['DEV1']\n")
    (tmp_path / "buggy.py").write_text(BUGGY)
    result = flake8("--select", "DEV", "--format", WHERE, "buggy.py", cwd=tmp_path)
    assert [line.rsplit(":", 1)[-1] for line in result.stdout.splitlines()] == ["DEV104", "DEV102"]
    assert result.stderr.count("unknown setting 'selekt'") == 1 and "Traceback" not in result.stderr
