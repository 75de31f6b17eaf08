"""The pre-commit hooks in .pre-commit-hooks.yaml, run by the real pre-commit.

`pre-commit try-repo` is not used: it builds the hook environment in a fresh store on
every call (ignoring PRE_COMMIT_HOME) and leaves untracked files out, such as a new
hooks file. Instead this checkout's working tree is committed to a snapshot repository
once, and each test's `.pre-commit-config.yaml` names it with `rev:` that commit, as a
user's config would. The hook environment is built once, by pip, from PyPI.
"""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# Building the hook environment pip-installs this checkout and libcst.
pytestmark = pytest.mark.network

ROOT = Path(__file__).resolve().parent.parent
BUGGY = """\
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
x = torch.zeros(3)
x.to(device)
print(x + torch.ones(3, device=device))
"""
FIXED = BUGGY.replace("x.to(device)", "x = x.to(device)")


def git(*args: str, cwd: Path, env: dict) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True,
                          capture_output=True, text=True).stdout


def pre_commit(*args: str, cwd: Path, env: dict, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pre_commit", *args], cwd=cwd, env=env, timeout=timeout,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def isolated_environment(home: Path) -> dict:
    """The caller's environment without its git and pre-commit settings."""
    # GIT_DIR or GIT_INDEX_FILE are set when the tests run from a git hook; SKIP skips hooks.
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("GIT_", "PRE_COMMIT")) and key != "SKIP"}
    env.update(GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1", PRE_COMMIT_HOME=str(home))
    return env


def new_repository(path: Path, env: dict) -> None:
    path.mkdir(parents=True, exist_ok=True)
    git("init", "-q", cwd=path, env=env)
    git("config", "user.email", "tests@example.com", cwd=path, env=env)
    git("config", "user.name", "devlint tests", cwd=path, env=env)


def snapshot(work: Path, target: Path, env: dict) -> None:
    """Commit this checkout's files (tracked, and untracked unless ignored) to `target`."""
    # The caller's own git settings read the checkout (safe.directory, excludes).
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=ROOT, capture_output=True, text=True)
    if listed.returncode != 0:
        pytest.fail(f"these tests copy the hooks from a git checkout, and {ROOT} is not one:\n"
                    f"{listed.stderr}", pytrace=False)
    new_repository(work, env)
    for name in filter(None, listed.stdout.split("\0")):
        if (ROOT / name).is_file():  # a tracked file deleted from the working tree is left out
            (work / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, work / name)
    git("add", "-A", cwd=work, env=env)
    git("commit", "-q", "-m", "snapshot of the working tree", cwd=work, env=env)
    try:
        # Atomic: under xdist another worker may have put its snapshot there first.
        os.rename(work, target)
    except OSError:
        if not (target / ".git").is_dir():
            raise


class Project:
    """A user's repository whose .pre-commit-config.yaml uses both hooks."""

    def __init__(self, path: Path, env: dict, repo: Path, rev: str) -> None:
        self.path, self.env = path, env
        new_repository(path, env)
        hooks = "\n".join(f"  - id: {hook}" for hook in ("devlint", "devlint-fix"))
        # A JSON string is a YAML string, whatever the path's characters.
        config = f"repos:\n- repo: {json.dumps(str(repo))}\n  rev: {rev}\n  hooks:\n{hooks}\n"
        self.stage(".pre-commit-config.yaml", config)
        git("commit", "-q", "-m", "pre-commit config", cwd=path, env=env)

    def stage(self, name: str, text: str) -> None:
        (self.path / name).write_text(text)
        git("add", name, cwd=self.path, env=self.env)

    def run(self, *hook: str) -> subprocess.CompletedProcess:
        """`pre-commit run [HOOK]` on the staged files, as `git commit` would."""
        return pre_commit("run", *hook, "--color", "never", cwd=self.path, env=self.env)


@pytest.fixture(scope="module")
def hooks(tmp_path_factory):
    """(environment, snapshot repository, its commit), the hook environment built."""
    if importlib.util.find_spec("pre_commit") is None:
        pytest.fail("pre-commit is not installed: pip install -r requirements-test.txt", pytrace=False)
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # this run's folder, so every worker shares one hook environment
    env = isolated_environment(shared / "pre-commit-home")
    repo = shared / "devlint-snapshot"
    if not repo.exists():
        snapshot(tmp_path_factory.mktemp("snapshot") / "repo", repo, env)
    rev = git("rev-parse", "HEAD", cwd=repo, env=env).strip()
    # Install first, so that a failure (no network) gets one clear message.
    # pre-commit's own lock on PRE_COMMIT_HOME makes the other workers wait, then reuse it.
    scratch = Project(tmp_path_factory.mktemp("install"), env, repo, rev)
    try:
        result = pre_commit("install-hooks", cwd=scratch.path, env=env, timeout=300)
        # pip's own error is last, then "Check the log at ..." for the whole story.
        failure = None if result.returncode == 0 else "\n".join(result.stdout.splitlines()[-15:])
    except subprocess.TimeoutExpired:
        failure = "pre-commit install-hooks took over 300 s"
    if failure is not None:
        pytest.fail("pre-commit could not build the devlint hook environment. It pip-installs this "
                    "checkout and libcst, so these tests need access to PyPI (or to the index in "
                    f"PIP_INDEX_URL).\n{failure}", pytrace=False)
    return env, repo, rev


@pytest.fixture
def project(tmp_path, hooks):
    return Project(tmp_path / "project", *hooks)


def test_check_hook_fails_on_a_staged_bug(project):
    project.stage("bug.py", BUGGY)
    result = project.run("devlint")
    assert result.returncode == 1, result.stdout
    assert "bug.py:5:1: DEV104" in result.stdout
    assert (project.path / "bug.py").read_text() == BUGGY  # checking writes nothing


def test_fix_hook_rewrites_the_file_and_fails_the_commit(project):
    project.stage("bug.py", BUGGY)
    result = project.run("devlint-fix")
    # devlint exits 0 (all fixed); pre-commit fails because the hook changed a file.
    assert result.returncode == 1, result.stdout
    assert "files were modified by this hook" in result.stdout
    assert (project.path / "bug.py").read_text() == FIXED


def test_a_clean_staged_file_passes(project):
    project.stage("clean.py", FIXED)
    result = project.run("devlint")
    assert result.returncode == 0, result.stdout
    assert "Passed" in result.stdout


def test_both_hooks_are_skipped_without_python_files(project):
    project.stage("README.md", "# notes\n")
    result = project.run()
    assert result.returncode == 0, result.stdout
    assert result.stdout.count("(no files to check)Skipped") == 2, result.stdout
    # devlint never ran (on `.` it would have written its cache here).
    assert not (project.path / ".devlint_cache").exists()
