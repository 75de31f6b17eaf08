"""`--fix`, `--diff` and the fix engine: fixes change what they should and not a byte more."""
from __future__ import annotations

import difflib
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from devlint.diagnostics import Diagnostic
from devlint.engine import check_text
from devlint.fixes.apply import apply_pass, resolve
from devlint.fixes.model import SAFE, UNSAFE, Edit, Fix
from devlint.fixes.writer import write_fixed
from devlint.rules import ALL_RULES

ROOT = Path(__file__).resolve().parent.parent
CODES = frozenset(rule.code for rule in ALL_RULES)
BUGGY = """\
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
x = torch.randn(3)
x.to(device)
y = torch.randn(3, device=device)
if True:
\tz = x + y
print(y.numpy())
"""
FIXED = """\
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
x = torch.randn(3)
x = x.to(device)
y = torch.randn(3, device=device)
if True:
\tz = x + y
print(y.detach().cpu().numpy())
"""
CLEAN = "import torch\nx = torch.randn(3)\nprint(x + 1)\n"


def devlint(*args, cwd, stdin=None):
    return subprocess.run([sys.executable, "-m", "devlint", *args], cwd=cwd, input=stdin,
                          capture_output=True, timeout=120)


# --- the whole file through the command line ------------------------------------------------

@pytest.mark.parametrize("variant", ["plain", "crlf", "bom", "no-final-newline", "bom-crlf", "latin-1"])
def test_fix_keeps_encoding_line_endings_and_final_newline(tmp_path, variant):
    before, after = BUGGY, FIXED
    encoding = "utf-8"
    if "crlf" in variant:
        before, after = before.replace("\n", "\r\n"), after.replace("\n", "\r\n")
    if variant == "no-final-newline":
        before, after = before.rstrip("\n"), after.rstrip("\n")
    if variant == "latin-1":
        encoding = "latin-1"
        header = "# -*- coding: latin-1 -*-\n# caf\u00e9\n"
        before, after = header + before, header + after
    data, expected = before.encode(encoding), after.encode(encoding)
    if "bom" in variant:
        data, expected = b"\xef\xbb\xbf" + data, b"\xef\xbb\xbf" + expected
    target = tmp_path / "train.py"
    target.write_bytes(data)
    target.chmod(0o640)
    result = devlint("--fix", "--no-cache", "train.py", cwd=tmp_path)
    assert target.read_bytes() == expected, result.stderr.decode()
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert result.returncode == 0, result.stdout.decode()
    assert b"Fixed 2 problems; none remain" in result.stdout
    assert not [p for p in tmp_path.iterdir() if p.name != "train.py" and not p.name.startswith(".devlint")]


def test_files_without_fixes_are_not_rewritten(tmp_path):
    (tmp_path / "clean.py").write_text(CLEAN)
    (tmp_path / "buggy.py").write_text(BUGGY)
    os.utime(tmp_path / "clean.py", ns=(1_000_000_000, 1_000_000_000))
    before = (tmp_path / "clean.py").stat()
    devlint("--fix", "--no-cache", ".", cwd=tmp_path)
    after = (tmp_path / "clean.py").stat()
    assert (after.st_mtime_ns, after.st_ino) == (before.st_mtime_ns, before.st_ino)
    assert (tmp_path / "buggy.py").read_text() == FIXED


def test_diff_prints_the_changes_and_writes_nothing(tmp_path):
    (tmp_path / "buggy.py").write_text(BUGGY)
    result = devlint("--diff", "--no-cache", "buggy.py", cwd=tmp_path)
    assert result.returncode == 1
    assert (tmp_path / "buggy.py").read_text() == BUGGY
    out = result.stdout.decode()
    assert "-x.to(device)\n+x = x.to(device)\n" in out
    assert "+print(y.detach().cpu().numpy())\n" in out
    assert b"Would fix 2 problems in 1 file." in result.stderr
    (tmp_path / "clean.py").write_text(CLEAN)
    clean = devlint("--diff", "--no-cache", "clean.py", cwd=tmp_path)
    assert (clean.returncode, clean.stdout) == (0, b"")


def test_unsafe_fixes_need_the_flag(tmp_path):
    source = 'import torch\ndevice = torch.device("cuda")\nx = torch.zeros(2).to(device)\n'
    (tmp_path / "a.py").write_text(source)
    safe_only = devlint("--fix", "--no-cache", "a.py", cwd=tmp_path)
    assert (tmp_path / "a.py").read_text() == source
    assert safe_only.returncode == 1
    hint = devlint("--no-cache", "a.py", cwd=tmp_path).stdout.decode()
    assert "(1 more with `--unsafe-fixes`)" in hint
    devlint("--fix", "--unsafe-fixes", "--no-cache", "a.py", cwd=tmp_path)
    assert (tmp_path / "a.py").read_text() == (
        'import torch\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
        'x = torch.zeros(2).to(device)\n')


def test_fallback_style_setting_spells_the_guard_with_torch_accelerator(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.devlint]\nfallback-style = "accelerator"\n')
    (tmp_path / "a.py").write_text('from torch import nn\nmodel = nn.Linear(2, 2).to("cuda")\n')
    devlint("--fix", "--unsafe-fixes", "--no-cache", "a.py", cwd=tmp_path)
    assert (tmp_path / "a.py").read_text() == (
        "import torch\nfrom torch import nn\nmodel = nn.Linear(2, 2).to("
        '(torch.accelerator.current_accelerator(check_available=True) or torch.device("cpu")).type)\n')


def test_read_only_file_is_reported_not_written(tmp_path):
    target = tmp_path / "buggy.py"
    target.write_text(BUGGY)
    target.chmod(0o444)
    result = devlint("--fix", "--no-cache", "buggy.py", cwd=tmp_path)
    assert target.read_text() == BUGGY
    assert b"read-only" in result.stderr
    assert result.returncode == 1
    assert b"DEV104" in result.stdout  # its findings are still reported


def test_fix_through_a_symlink_keeps_the_link(tmp_path):
    (tmp_path / "real.py").write_text(BUGGY)
    (tmp_path / "link.py").symlink_to(tmp_path / "real.py")
    devlint("--fix", "--no-cache", "link.py", cwd=tmp_path)
    assert (tmp_path / "link.py").is_symlink()
    assert (tmp_path / "real.py").read_text() == FIXED


def test_stdin_fix_prints_the_fixed_source(tmp_path):
    result = devlint("--fix", "-", "--stdin-filename", "x.py", cwd=tmp_path, stdin=BUGGY.encode())
    assert result.stdout.decode() == FIXED
    assert result.returncode == 0
    assert b"Fixed 2 problems" in result.stderr


def test_show_fixes_and_json_carry_the_fix(tmp_path):
    (tmp_path / "buggy.py").write_text(BUGGY)
    shown = devlint("--show-fixes", "--no-cache", "buggy.py", cwd=tmp_path).stdout.decode()
    assert "    fix (safe): Assign the moved tensor back to `x`\n" in shown
    listed = devlint("--fix", "--show-fixes", "--no-cache", "buggy.py", cwd=tmp_path).stdout.decode()
    assert "    1 \u00d7 DEV104 (discarded-tensor-move)\n" in listed
    (tmp_path / "buggy.py").write_text(BUGGY)
    data = json.loads(devlint("--output-format", "json", "--no-cache", "buggy.py", cwd=tmp_path).stdout)
    fixes = {d["code"]: d["fix"] for d in data}
    assert fixes["DEV106"] == {"applicability": "safe", "message": "Copy it to the host first (`.detach().cpu()`)",
                               "edits": [{"line": 8, "column": 7, "end_line": 8, "end_column": 7,
                                          "content": ".detach().cpu()"}]}


def test_demo_fixed_still_runs_and_is_clean_for_the_fixed_rules(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("numpy")
    work = tmp_path / "examples"
    work.mkdir()
    source = (ROOT / "examples" / "train_demo.py").read_bytes()
    (work / "train_demo.py").write_bytes(source)
    diff = devlint("--diff", "--no-cache", "train_demo.py", cwd=work)
    assert (work / "train_demo.py").read_bytes() == source and diff.returncode == 1
    result = devlint("--fix", "--no-cache", "--output-format", "json", "train_demo.py", cwd=work)
    after = (work / "train_demo.py").read_text(encoding="utf-8")
    expected = difflib.unified_diff(source.decode().splitlines(keepends=True), after.splitlines(keepends=True),
                                    "train_demo.py", "train_demo.py")
    assert diff.stdout.decode() == "".join(expected)  # --diff shows exactly what --fix writes
    remaining = {d["code"] for d in json.loads(result.stdout)}
    fixed_rules = {"DEV101", "DEV102", "DEV103", "DEV104", "DEV106", "DEV404"}
    assert remaining and not remaining & fixed_rules
    assert all(d["fix"] is None or d["fix"]["applicability"] == UNSAFE for d in json.loads(result.stdout))
    run = subprocess.run([sys.executable, "train_demo.py"], cwd=work, capture_output=True, timeout=300)
    assert run.returncode == 0, run.stderr.decode()[-2000:]
    assert b"accuracy:" in run.stdout


# --- the engine's pieces ------------------------------------------------------------------

def _diagnostic(line: int, fix: Fix, code: str = "DEV104") -> Diagnostic:
    return Diagnostic(code, "x", "error", "m", "t.py", line, 0, line, 1, fix.to_json())


def test_overlapping_fixes_are_applied_in_order_one_per_pass():
    text = "a = f(x)\n"
    first = Fix(SAFE, "first", (Edit(1, 4, 1, 8, "g(x)"),))
    second = Fix(SAFE, "second", (Edit(1, 6, 1, 7, "y"),))
    candidates, invalid = resolve(text, [(_diagnostic(1, first), first), (_diagnostic(1, second), second)])
    new, applied, dropped = apply_pass(text, candidates)
    assert (new, [c.fix.message for c in applied], dropped, invalid) == ("a = g(x)\n", ["first"], [], [])


def test_identical_edits_from_two_fixes_are_made_once():
    text = "x = 1\ny = 2\n"
    add_import = Edit(1, 0, 1, 0, "import torch\n")
    one = Fix(SAFE, "one", (Edit(1, 4, 1, 5, "torch.ones(1)"), add_import))
    two = Fix(SAFE, "two", (Edit(2, 4, 2, 5, "torch.ones(2)"), add_import))
    candidates, _ = resolve(text, [(_diagnostic(1, one), one), (_diagnostic(2, two), two)])
    new, applied, _ = apply_pass(text, candidates)
    assert new == "import torch\nx = torch.ones(1)\ny = torch.ones(2)\n"
    assert len(applied) == 2


def test_a_fix_that_breaks_the_syntax_is_dropped_and_the_others_kept():
    text = "x = 1\ny = 2\n"
    good = Fix(SAFE, "good", (Edit(1, 4, 1, 5, "3"),))
    broken = Fix(SAFE, "broken", (Edit(2, 4, 2, 5, "(("),))
    candidates, _ = resolve(text, [(_diagnostic(1, good), good), (_diagnostic(2, broken), broken)])
    new, applied, dropped = apply_pass(text, candidates)
    assert new == "x = 3\ny = 2\n"
    assert [c.fix.message for c in applied] == ["good"] and [c.fix.message for c in dropped] == ["broken"]


def test_edits_outside_the_file_are_refused():
    fix = Fix(SAFE, "far", (Edit(9, 0, 9, 1, "x"),))
    candidates, invalid = resolve("x = 1\n", [("key", fix)])
    assert candidates == [] and invalid == ["key"]


def test_writer_refuses_a_file_that_changed_meanwhile(tmp_path):
    target = tmp_path / "a.py"
    target.write_bytes(b"new content\n")
    problem = write_fixed(str(target), b"old content\n", b"fixed\n")
    assert problem is not None and "changed" in problem
    assert target.read_bytes() == b"new content\n"


def test_every_rule_that_says_fixable_offers_a_fix_in_its_own_example():
    """The `fixable` flag in the docs is true exactly for rules whose fixes exist."""
    from fixture_support import enabled_for

    for rule in ALL_RULES:
        offered = set()
        for snippet in rule.invalid:
            for diagnostic in check_text(snippet, "snippet.py", enabled_for(snippet) | {rule.code}):
                if diagnostic.code == rule.code and diagnostic.fix is not None:
                    offered.add(diagnostic.fix["applicability"])
        assert bool(offered) == rule.fixable, f"{rule.code}: fixable={rule.fixable} but fixes offered: {offered}"


def test_a_fix_is_not_offered_where_libcst_positions_do_not_match_the_text():
    """libcst counts a form feed as no column: editing there would hit the wrong characters."""
    text = BUGGY.replace("x.to(device)", "\x0cx.to(device)")
    diagnostics = {d.code: d for d in check_text(text, "t.py", CODES)}
    assert diagnostics["DEV104"].fix is None
    assert diagnostics["DEV106"].fix is not None


def test_names_a_fix_may_use_are_bound_before_it_in_its_scope():
    """A fix may read a name bound earlier in its function or in the module, and may rebind
    (`w = w.to(...)`) only a name of its own function: rebinding a global would make it local
    to the whole function (UnboundLocalError)."""
    import libcst as cst

    from devlint.rules.context import RuleContext

    source = (
        "weights = 1\n"
        "def score(x):\n"
        "    use(weights, x, later)\n"
        "    later = 2\n"
        "class Net:\n"
        "    size = 3\n"
        "    def forward(self):\n"
        "        use(size, self)\n")
    module = cst.parse_module(source)
    context = RuleContext(module, text=source)
    first_use = module.body[1].body.body[0].body[0].value
    method_use = module.body[2].body.body[1].body.body[0].body[0].value
    bound = context.edits.name_bound_before
    assert bound("weights", first_use) and not bound("weights", first_use, local=True)
    assert bound("x", first_use, local=True)
    assert not bound("later", first_use)
    assert bound("self", method_use) and not bound("size", method_use)


def test_fixes_that_never_settle_stop_after_a_bounded_number_of_passes():
    from devlint.fixes.fixer import MAX_PASSES, fix_text

    grow = Fix(SAFE, "grow", (Edit(1, 0, 1, 0, "#"),))
    forever = [_diagnostic(1, grow)]
    text, applied, remaining, problems = fix_text("x = 1\n", forever, lambda new_text: forever, unsafe=False)
    assert text == "#" * MAX_PASSES + "x = 1\n"
    assert len(applied) == MAX_PASSES and remaining == forever
    assert problems == [f"fixes did not settle after {MAX_PASSES} passes; the last result is kept"]
    settled = fix_text("x = 1\n", forever, lambda new_text: [], unsafe=False)
    assert settled == ("#x = 1\n", forever, [], [])


_MAIN_GUARD_DEVICE = """\
import torch
from torch import nn


def predict(model):
    return model(torch.zeros(2, 4))


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    predict(nn.Linear(4, 2).to(device))
"""


def test_a_fix_in_a_function_does_not_lean_on_a_global_only_the_main_guard_binds():
    # `device` exists only when the file runs as a script: a function of it imported elsewhere
    # would raise NameError, so the move is not offered with that name
    found = [d for d in check_text(_MAIN_GUARD_DEVICE, "predict.py", frozenset({"DEV101", "DEV103"}))]
    assert [d.line for d in found] == [6]
    edits = [edit.content for d in found if d.fix is not None for edit in d.fix.edits]
    assert not any("device" in content and "torch.device" not in content for content in edits), edits


_EMA_SHADOW = """\
import copy
import torch
from torch import nn


class EMA:
    def __init__(self, parameters):
        self.shadow = [p.clone().detach() for p in parameters]

    def step(self, parameters):
        for shadow, param in zip(self.shadow, parameters):
            shadow.sub_(0.1 * (shadow - param))


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
net = nn.Linear(3, 3)
ema = EMA(copy.deepcopy(net).parameters())
net.to(device)
ema.step(net.parameters())
"""


def test_no_move_fix_for_a_tensor_the_code_updates_in_place():
    # `shadow = shadow.to(param.device)` would make `sub_` update a copy: the EMA weights would
    # silently stop changing. The mismatch is reported, without a fix.
    found = [d for d in check_text(_EMA_SHADOW, "ema.py", frozenset({"DEV102"}))]
    assert [(d.code, d.line) for d in found] == [("DEV102", 12)]
    assert found[0].fix is None


_EMA_FROM_STATE_DICT = """\
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
net = nn.Linear(3, 3)
shadow = {k: v.detach().clone() for k, v in net.state_dict().items()}
net.to(device)
for k, v in net.state_dict().items():
    shadow[k].mul_(0.99).add_(v, alpha=0.01)
total = torch.zeros(3)
total += net(torch.randn(2, 3, device=device)).sum(0)
"""


def test_no_move_fix_for_the_receiver_of_an_in_place_update():
    # `shadow[k].mul_(d).to(v.device).add_(v)` would add into a copy, and `total = total.to(...)`
    # before `+=` would leave the CPU tensor the code keeps unchanged: both are reported, unfixed.
    found = check_text(_EMA_FROM_STATE_DICT, "ema.py", frozenset({"DEV102"}))
    assert [(d.code, d.line) for d in found] == [("DEV102", 9), ("DEV102", 11)]
    assert [d.fix for d in found] == [None, None]
