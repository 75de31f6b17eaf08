"""The command line, run as users run it: in a subprocess."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BUGGY = """\
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
x = torch.randn(3)
x.to(device)
y = torch.randn(3, device=device)
z = x + y
"""
CLEAN = "import torch\nx = torch.randn(3)\nprint(x + 1)\n"
JSON_KEYS = ["code", "name", "severity", "message", "path", "line", "column", "end_line", "end_column", "fix"]


def devlint(*args, cwd=None, stdin=None):
    return subprocess.run([sys.executable, "-m", "devlint", *args], cwd=cwd, input=stdin,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
def project(tmp_path):
    (tmp_path / "buggy.py").write_text(BUGGY)
    (tmp_path / "clean.py").write_text(CLEAN)
    return tmp_path


def test_text_output_and_exit_code(project):
    result = devlint("buggy.py", cwd=project)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert lines[0].startswith("buggy.py:4:1: DEV104 [*] ")
    assert lines[1].startswith("buggy.py:6:5: DEV102 [*] `x` is on cpu")
    assert "line 3" in lines[1]
    assert lines[-2] == "Found 2 problems in 1 of 1 file checked."
    assert lines[-1] == "[*] 2 fixable with `--fix`."


def test_clean_file_exits_zero(project):
    result = devlint("clean.py", cwd=project)
    assert result.returncode == 0
    assert result.stdout == "All checks passed (1 file checked).\n"


def test_json_output_follows_the_contract(project):
    result = devlint(".", "--output-format", "json", cwd=project)
    assert result.returncode == 1
    data = json.loads(result.stdout)
    assert [list(item) for item in data] == [JSON_KEYS] * 2
    first = data[0]
    assert (first["code"], first["name"], first["severity"]) == ("DEV104", "discarded-tensor-move", "error")
    assert (first["path"], first["line"], first["column"], first["end_line"], first["end_column"]) == ("buggy.py", 4, 0, 4, 12)
    assert first["fix"] == {"applicability": "safe", "message": "Assign the moved tensor back to `x`",
                            "edits": [{"line": 4, "column": 0, "end_line": 4, "end_column": 0, "content": "x = "}]}
    assert data[1]["fix"]["edits"] == [{"line": 6, "column": 0, "end_line": 6, "end_column": 0, "content": "x = x.to(y.device)\n"}]
    assert [d["line"] for d in data] == sorted(d["line"] for d in data)


def test_select_ignore_extend_select(project):
    assert "DEV102" not in devlint("buggy.py", "--select", "DEV104", cwd=project).stdout
    assert "DEV104" not in devlint("buggy.py", "--ignore", "DEV104", cwd=project).stdout
    both = devlint("buggy.py", "--select", "DEV104", "--extend-select", "operand-device-mismatch", cwd=project)
    assert "DEV104" in both.stdout and "DEV102" in both.stdout
    assert devlint("buggy.py", "--select", "DEV1", "--ignore", "DEV10", cwd=project).returncode == 0


def test_exit_zero_and_statistics(project):
    result = devlint("buggy.py", "--exit-zero", "--statistics", cwd=project)
    assert result.returncode == 0
    assert "     1  DEV102  operand-device-mismatch" in result.stdout


def test_stdin_with_filename(project):
    result = devlint("-", "--stdin-filename", "pipe.py", stdin=BUGGY, cwd=project)
    assert result.returncode == 1
    assert result.stdout.startswith("pipe.py:4:1: DEV104")


def test_noqa_comments(project):
    source = BUGGY.replace("x.to(device)\n", "x.to(device)  # noqa: DEV104\n").replace("z = x + y\n", "z = x + y  # noqa\n")
    (project / "quiet.py").write_text(source)
    assert devlint("quiet.py", cwd=project).returncode == 0
    (project / "wrong_code.py").write_text(BUGGY.replace("x.to(device)\n", "x.to(device)  # noqa: DEV101\n"))
    assert "DEV104" in devlint("wrong_code.py", cwd=project).stdout
    (project / "exempt.py").write_text("# devlint: noqa\n" + BUGGY)
    assert devlint("exempt.py", cwd=project).returncode == 0


def test_pyproject_settings_found_by_walking_up(project):
    (project / "pyproject.toml").write_text(
        '[tool.devlint]\nignore = ["DEV104"]\nexclude = ["skipped"]\n'
        '[tool.devlint.per-file-ignores]\n"other.py" = ["DEV102"]\n')
    (project / "pkg" / "skipped").mkdir(parents=True)
    (project / "pkg" / "buggy.py").write_text(BUGGY)
    (project / "pkg" / "other.py").write_text(BUGGY)
    (project / "pkg" / "skipped" / "buggy.py").write_text(BUGGY)
    result = devlint("pkg", "--quiet", cwd=project)
    assert [line.split(" ")[0] for line in result.stdout.splitlines()] == ["pkg/buggy.py:6:5:"]
    result = devlint("pkg", cwd=project)
    assert "1 of 2 files" in result.stdout


def test_default_excludes(project):
    for folder in (".venv", "build", "node_modules", "__pycache__", ".git"):
        (project / folder).mkdir(exist_ok=True)
        (project / folder / "buggy.py").write_text(BUGGY)
    result = devlint(".", "--select", "DEV104", cwd=project)
    assert result.stdout.count("DEV104") == 1


@pytest.mark.parametrize("args, words", [
    (["missing.py"], "path not found: missing.py"),
    (["--select", "XYZ9", "clean.py"], "unknown rule selector"),
    (["--output-format", "yaml", "clean.py"], "invalid choice"),
    (["--no-such-flag"], "unrecognized arguments"),
])
def test_usage_errors_exit_two_with_one_line(project, args, words):
    result = devlint(*args, cwd=project)
    assert result.returncode == 2
    assert words in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr


def test_bad_config_exits_two(project):
    (project / "pyproject.toml").write_text("[tool.devlint]\nselekt = ['DEV1']\n")
    result = devlint("clean.py", cwd=project)
    assert result.returncode == 2 and "unknown setting 'selekt'" in result.stderr


def test_rules_and_explain():
    listing = devlint("rules").stdout
    for code in ("DEV101", "DEV102", "DEV103", "DEV104", "DEV105", "DEV106", "DEV107"):
        assert code in listing
    explained = devlint("explain", "DEV104")
    assert explained.returncode == 0
    for heading in ("## DEV104 `discarded-tensor-move`", "### Why is this bad?", "### Example", "### Use instead"):
        assert heading in explained.stdout
    assert devlint("explain", "operand-device-mismatch").stdout.startswith("## DEV102")
    assert devlint("explain", "DEV999").returncode == 2


def test_parallel_and_serial_runs_agree(tmp_path):
    for index in range(20):
        (tmp_path / f"m{index}.py").write_text(BUGGY)
    serial = devlint(".", "-j", "1", "--output-format", "json", cwd=tmp_path)
    parallel = devlint(".", "-j", "2", "--output-format", "json", cwd=tmp_path)
    assert serial.stdout == parallel.stdout
    assert len(json.loads(serial.stdout)) == 40


def test_demo_reports_each_bug():
    result = devlint("examples", "--output-format", "json", cwd=ROOT)
    found = {(Path(d["path"]).name, d["line"], d["code"]) for d in json.loads(result.stdout)}
    assert found == {
        ("generate_demo.py", 11, "DEV107"),
        ("train_demo.py", 22, "DEV105"),
        ("train_demo.py", 27, "DEV103"),
        ("train_demo.py", 33, "DEV404"),
        ("train_demo.py", 39, "DEV203"),
        ("train_demo.py", 47, "DEV104"),
        ("train_demo.py", 48, "DEV101"),
        ("train_demo.py", 49, "DEV102"),
        ("train_demo.py", 53, "DEV401"),
        ("train_demo.py", 59, "DEV106"),
    }


def test_readme_shows_what_the_demo_prints():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    printed = devlint("examples", "--no-cache", cwd=ROOT).stdout
    assert f"What the demo run prints:\n\n```\n{printed}```" in readme


def test_results_cache_is_used_and_invalidated(project):
    first = devlint("buggy.py", "--output-format", "json", cwd=project)
    entries = list((project / ".devlint_cache").rglob("*.json"))
    assert len(entries) == 1
    assert (project / ".devlint_cache" / ".gitignore").read_text() == "*\n"
    # A stored entry is what a second run reports: prove it by editing the entry.
    stored = json.loads(entries[0].read_text())
    stored["diagnostics"][0]["message"] = "from the cache"
    entries[0].write_text(json.dumps(stored))
    assert json.loads(devlint("buggy.py", "--output-format", "json", cwd=project).stdout)[0]["message"] == "from the cache"
    assert json.loads(devlint("buggy.py", "--no-cache", "--output-format", "json", cwd=project).stdout) == json.loads(first.stdout)
    # Changing the file changes the key.
    (project / "buggy.py").write_text(BUGGY.replace("x.to(device)\n", "x = x.to(device)\n"))
    after = json.loads(devlint("buggy.py", "--output-format", "json", cwd=project).stdout)
    assert [d["code"] for d in after] == []


def test_no_cache_writes_nothing(project):
    devlint("buggy.py", "--no-cache", cwd=project)
    assert not (project / ".devlint_cache").exists()


def test_force_exclude_applies_excludes_to_named_files(project):
    (project / "pyproject.toml").write_text('[tool.devlint]\nexclude = ["buggy.py"]\n')
    assert devlint("buggy.py", "--no-cache", cwd=project).returncode == 1  # named: checked
    forced = devlint("buggy.py", "clean.py", "--force-exclude", "--no-cache", cwd=project)
    assert forced.returncode == 0 and "1 file checked" in forced.stdout
