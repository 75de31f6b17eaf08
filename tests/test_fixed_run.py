"""Fixed programs still run: each `.fixed.py` twin, run as a program on the CPU, exits 0.

On a CPU-only machine every tensor is on the CPU, so this is no test of placement: it shows
that a fix did not break the program (a name used before it is defined, a wrong argument, a
statement moved to the wrong place). When a twin fails, its original runs too; if the
original runs, the fix broke it.

A fixture that cannot run here (a downloaded model or dataset, a saved file, a package the
tests do not install, a GPU, a distributed launch) says why on a comment line of the original,
`# fixture-run: skip (<reason>)`, and is skipped with that reason. A project twin runs as its
project's main programs, in a copy of the project with the twin in its original's place.

Programs run through `program_runner.py`: torch is imported once, each program runs in a fork,
and every DataLoader pass stops after two batches, so a training script takes seconds.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fixture_support import FIXTURES, PROJECTS, project_files

RUNNER = Path(__file__).with_name("program_runner.py")
TIMEOUT = 60  # seconds for one program
TWINS = sorted(FIXTURES.rglob("*.fixed.py"))
_SKIP = re.compile(r"^#\s*fixture-run:\s*skip\s*\((?P<reason>.+)\)\s*$", re.MULTILINE)


def original_of(twin: Path) -> Path:
    return twin.with_name(twin.name[: -len(".fixed.py")] + ".py")


def skip_reason(original: Path):
    match = _SKIP.search(original.read_text(encoding="utf-8"))
    return match.group("reason") if match else None


def programs(twin: Path, version: Path, scratch: Path) -> list[Path]:
    """What to run for `version` (the twin or its original): the file itself, or for a project
    file the project's main programs, in a copy of the project with `version` in place."""
    if PROJECTS not in twin.parents:
        return [version]
    folder = PROJECTS / twin.relative_to(PROJECTS).parts[0]
    copy = scratch / folder.name
    shutil.copytree(folder, copy, ignore=shutil.ignore_patterns("*.fixed.py", "__pycache__", ".*"))
    (copy / original_of(twin).relative_to(folder)).write_bytes(version.read_bytes())
    mains = [copy / p.relative_to(folder) for p in project_files(folder)
             if '__name__ == "__main__"' in p.read_text(encoding="utf-8")]
    assert mains, f"{folder.name}: no file of the project runs as a program"
    return mains


@pytest.fixture(scope="module")
def run_program():
    """One runner per test process; CUDA is hidden so a GPU machine runs the programs as a CPU one would."""
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", OMP_NUM_THREADS="1")
    runner = subprocess.Popen([sys.executable, str(RUNNER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True, env=env)

    def run(path: Path) -> dict:
        runner.stdin.write(json.dumps({"path": str(path), "timeout": TIMEOUT}) + "\n")
        runner.stdin.flush()
        reply = runner.stdout.readline()
        assert reply, "program_runner.py stopped answering"
        return dict(json.loads(reply), path=path)

    yield run
    runner.stdin.close()
    runner.wait(timeout=30)


def failures(run_program, paths: list[Path]) -> list[dict]:
    return [result for result in map(run_program, paths) if result["rc"] != 0]


def describe(results: list[dict]) -> str:
    def status(result):
        return f"timed out after {TIMEOUT} s" if result["rc"] is None else f"exit {result['rc']}"
    return "\n".join(f"--- {r['path'].name}: {status(r)}\n{r['output'].rstrip()}" for r in results)


@pytest.mark.parametrize("twin", TWINS, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_fixed_program_runs_on_the_cpu(twin, run_program, tmp_path):
    original = original_of(twin)
    reason = skip_reason(original)
    if reason:
        pytest.skip(reason)
    fixed_failures = failures(run_program, programs(twin, twin, tmp_path / "fixed"))
    if not fixed_failures:
        return
    if not failures(run_program, programs(twin, original, tmp_path / "original")):
        pytest.fail(f"{original.name} runs on the CPU but {twin.name} does not: the fix broke the program\n"
                    + describe(fixed_failures), pytrace=False)
    pytest.fail(f"{twin.name} fails on the CPU, and so does {original.name}: make the fixture run, or say why it "
                f"cannot with `# fixture-run: skip (<reason>)` in {original.name}\n" + describe(fixed_failures),
                pytrace=False)
