"""Bad input gets a DEV0xx diagnostic (or nothing), never a traceback, and the other files are still checked."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

BUGGY = "import torch\nx = torch.randn(3)\nx.cuda()\n"


def run_on(tmp_path, name: str, content: bytes):
    (tmp_path / name).write_bytes(content)
    (tmp_path / "good.py").write_text(BUGGY)
    result = subprocess.run([sys.executable, "-m", "devlint", ".", "--output-format", "json"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=300)
    assert "Traceback" not in result.stderr
    assert result.returncode in (0, 1), result.stderr
    diagnostics = json.loads(result.stdout)
    assert any(d["path"] == "good.py" and d["code"] == "DEV104" for d in diagnostics), "other files must still be checked"
    return [d for d in diagnostics if d["path"] == name]


def test_syntax_error(tmp_path):
    found = run_on(tmp_path, "broken.py", b"import torch\nloss = = model(x)\nprint(loss)\n")
    assert [(d["code"], d["line"]) for d in found] == [("DEV001", 2)]
    assert "syntax error" in found[0]["message"]


def test_newer_syntax_than_the_running_python_is_analysed(tmp_path):
    # PEP 695 type parameters (Python 3.12) parse with libcst whatever Python runs devlint
    source = (b"import torch\n\n\nclass Buffer[T]:\n    def __init__(self, item: T):\n        self.item = item\n\n\n"
              b"def put[T](x: T, device) -> Buffer[T]:\n    t = torch.zeros(3)\n    t.to(device)\n    return Buffer(x)\n")
    found = run_on(tmp_path, "generic.py", source)
    assert [(d["code"], d["line"]) for d in found] == [("DEV104", 11)]


def test_undecodable_file(tmp_path):
    found = run_on(tmp_path, "latin.py", b"import torch\nname = '\xff\xfe caf\xe9'\n")
    assert [(d["code"], d["line"]) for d in found] == [("DEV002", 2)]
    assert "utf-8" in found[0]["message"]


def test_declared_encoding_is_respected(tmp_path):
    source = "# -*- coding: latin-1 -*-\nimport torch\nname = 'caf\xe9'\nx = torch.randn(3)\nx.cuda()\n"
    found = run_on(tmp_path, "declared.py", source.encode("latin-1"))
    assert [d["code"] for d in found] == ["DEV104", "DEV301"]


def test_utf8_bom_is_read(tmp_path):
    found = run_on(tmp_path, "bom.py", b"\xef\xbb\xbf" + BUGGY.encode())
    assert [(d["code"], d["line"]) for d in found] == [("DEV104", 3), ("DEV301", 3)]


def test_binary_file(tmp_path):
    found = run_on(tmp_path, "blob.py", bytes(range(256)) * 4)
    assert [d["code"] for d in found] == ["DEV002"]
    assert "binary" in found[0]["message"]


def test_empty_file(tmp_path):
    assert run_on(tmp_path, "empty.py", b"") == []


def test_fifty_thousand_lines(tmp_path):
    body = "".join(f"v{i} = torch.randn({i % 7 + 1}) * 2\n" for i in range(50_000))
    assert run_on(tmp_path, "huge.py", ("import torch\n" + body).encode()) == []


@pytest.mark.parametrize("expression", [
    "(" * 1000 + "x" + ")" * 1000,
    " + ".join(["x"] * 1000),
    "[" * 1000 + "]" * 1000,
    "f(" * 1000 + ")" * 1000,
])
def test_thousand_deep_nesting(tmp_path, expression):
    found = run_on(tmp_path, "deep.py", f"import torch\nx = torch.randn(3)\ny = {expression}\n".encode())
    assert all(d["code"].startswith("DEV0") for d in found)


@pytest.mark.parametrize("expression, what", [
    (" + ".join(f"x{i}" for i in range(10_000)), "operators"),   # the parser's time grows with the square
    ("torch.zeros(3)" + ".float()" * 3000, "chained calls"),     # the parser's C stack overflows
])
def test_overlong_expressions_are_skipped_with_a_dev003(tmp_path, expression, what):
    found = run_on(tmp_path, "long.py", f"import torch\nx0 = torch.randn(3)\ny = {expression}\n".encode())
    assert [(d["code"], d["line"]) for d in found] == [("DEV003", 3)]
    assert what in found[0]["message"]


def test_unreadable_file(tmp_path):
    target = tmp_path / "secret.py"
    target.write_text(BUGGY)
    target.chmod(0)
    try:
        with open(target, "rb"):
            pytest.skip("running as a user who can read anything")
    except PermissionError:
        pass
    result = subprocess.run([sys.executable, "-m", "devlint", "secret.py", "--output-format", "json"], cwd=tmp_path,
                            capture_output=True, text=True)
    assert json.loads(result.stdout)[0]["code"] == "DEV002"
