"""The four doors through which the doctor looks at a machine: commands, the environment,
the file system and PyTorch. Checks see the machine only through these, so tests can
replay a recorded machine (`recording.py`) instead of this one."""
from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Protocol, Sequence

COMMAND_TIMEOUT_S = 20.0
TORCH_TIMEOUT_S = 180.0


@dataclass(frozen=True)
class CommandResult:
    """`found` is False when the program is not installed; `returncode` is None when it
    did not finish in time."""

    found: bool
    returncode: Optional[int] = None
    stdout: str = ""
    stderr: str = ""

    @property
    def succeeded(self) -> bool:
        return self.found and self.returncode == 0


NOT_FOUND = CommandResult(found=False)


class CommandRunner(Protocol):
    def run(self, argv: Sequence[str]) -> CommandResult: ...


class Environment(Protocol):
    def get(self, name: str) -> Optional[str]: ...

    def platform(self) -> Dict[str, str]:
        """`system` (Linux, Darwin, Windows), `release`, `machine`."""


class FileSystem(Protocol):
    def read_text(self, path: str) -> Optional[str]: ...

    def listdir(self, path: str) -> Optional[List[str]]: ...

    def link_target(self, path: str) -> Optional[str]: ...


class TorchFacade(Protocol):
    def snapshot(self) -> dict:
        """What PyTorch says about itself, as `torch_probe.py` writes it."""


@dataclass
class Probes:
    commands: CommandRunner
    environment: Environment
    files: FileSystem
    torch: TorchFacade


class SubprocessRunner:
    def run(self, argv: Sequence[str]) -> CommandResult:
        program = shutil.which(argv[0])
        if program is None:
            return NOT_FOUND
        try:
            done = subprocess.run([program, *argv[1:]], capture_output=True, text=True,
                                  errors="replace", timeout=COMMAND_TIMEOUT_S)
        except subprocess.TimeoutExpired as expired:
            return CommandResult(True, None, _text(expired.stdout), f"timed out after {COMMAND_TIMEOUT_S:.0f} s")
        except OSError as error:
            return CommandResult(True, 126, "", str(error))
        return CommandResult(True, done.returncode, done.stdout, done.stderr)


class OsEnvironment:
    def get(self, name: str) -> Optional[str]:
        return os.environ.get(name)

    def platform(self) -> Dict[str, str]:
        return {"system": platform.system(), "release": platform.release(), "machine": platform.machine()}


class LocalFileSystem:
    def read_text(self, path: str) -> Optional[str]:
        try:
            return Path(path).read_text(encoding="utf-8", errors="replace")
        except (OSError, ValueError):
            return None

    def listdir(self, path: str) -> Optional[List[str]]:
        try:
            return sorted(os.listdir(path))
        except OSError:
            return None

    def link_target(self, path: str) -> Optional[str]:
        try:
            return os.readlink(path)
        except (OSError, ValueError):
            return None


class SubprocessTorch:
    """Asks `python` (this interpreter unless told otherwise) about its torch, in a child
    process: importing torch and initialising CUDA can crash or hang, and neither may take
    the doctor down with it."""

    def __init__(self, python: Optional[str] = None) -> None:
        self.python = python or sys.executable

    def snapshot(self) -> dict:
        script = Path(__file__).with_name("torch_probe.py").read_text(encoding="utf-8")
        with tempfile.TemporaryDirectory(prefix="devlint-doctor-") as folder:
            out = os.path.join(folder, "torch.json")
            try:
                done = subprocess.run([self.python, "-c", script, out], capture_output=True, text=True,
                                      errors="replace", timeout=TORCH_TIMEOUT_S)
                problem = _probe_problem(done.returncode, done.stderr)
            except subprocess.TimeoutExpired:
                problem = f"the PyTorch probe did not finish in {TORCH_TIMEOUT_S:.0f} s (CUDA initialisation hung?)"
            except OSError as error:
                problem = f"cannot run {self.python}: {error}"
            snapshot = _read_json(out)
        snapshot["python"] = snapshot.get("python") or self.python
        if problem:
            snapshot["probe_error"] = problem
        return snapshot


def _probe_problem(returncode: int, stderr: str) -> Optional[str]:
    if returncode == 0:
        return None
    tail = " ".join(stderr.strip().splitlines()[-3:])
    if returncode < 0:
        return f"the PyTorch probe was killed by signal {-returncode} during its last step. {tail}".strip()
    return f"the PyTorch probe exited with status {returncode}. {tail}".strip()


def _read_json(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _text(output) -> str:
    if isinstance(output, bytes):
        return output.decode("utf-8", "replace")
    return output or ""


def live_probes(python: Optional[str] = None) -> Probes:
    return Probes(SubprocessRunner(), OsEnvironment(), LocalFileSystem(), SubprocessTorch(python))
