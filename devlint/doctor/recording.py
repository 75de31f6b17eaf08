"""Observations: everything the probes saw, as JSON. `Recorder` wraps live probes and keeps
what they return; `replay` answers from a recording, so a machine seen once (a user's
`devlint doctor --json`, or a test's hand-made situation) can be diagnosed anywhere.
What a recording does not mention is absent: a command not installed, a file not there,
a variable not set."""
from __future__ import annotations

import shlex
from typing import Dict, List, Optional, Sequence

from .probes import NOT_FOUND, CommandResult, Probes

#: Command output kept per stream; the checks need the first lines, people the rest.
KEEP_CHARS = 20_000


def command_key(argv: Sequence[str]) -> str:
    return shlex.join(argv)


class Recorder:
    """Live probes that write down every answer in `observations`."""

    def __init__(self, live: Probes) -> None:
        self.live = live
        self.observations: dict = {"platform": None, "env": {}, "commands": {}, "files": {},
                                   "dirs": {}, "links": {}, "torch": None}

    def probes(self) -> Probes:
        return Probes(_RecordedCommands(self), _RecordedEnvironment(self), _RecordedFiles(self), _RecordedTorch(self))


class _RecordedCommands:
    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder

    def run(self, argv: Sequence[str]) -> CommandResult:
        result = self.recorder.live.commands.run(argv)
        self.recorder.observations["commands"][command_key(argv)] = (
            {"returncode": result.returncode, "stdout": result.stdout[:KEEP_CHARS], "stderr": result.stderr[:KEEP_CHARS]}
            if result.found else None)
        return result


class _RecordedEnvironment:
    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder

    def get(self, name: str) -> Optional[str]:
        value = self.recorder.live.environment.get(name)
        self.recorder.observations["env"][name] = value
        return value

    def platform(self) -> Dict[str, str]:
        value = self.recorder.live.environment.platform()
        self.recorder.observations["platform"] = value
        return value


class _RecordedFiles:
    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder

    def read_text(self, path: str) -> Optional[str]:
        value = self.recorder.live.files.read_text(path)
        self.recorder.observations["files"][path] = None if value is None else value[:KEEP_CHARS]
        return value

    def listdir(self, path: str) -> Optional[List[str]]:
        value = self.recorder.live.files.listdir(path)
        self.recorder.observations["dirs"][path] = value
        return value

    def link_target(self, path: str) -> Optional[str]:
        value = self.recorder.live.files.link_target(path)
        self.recorder.observations["links"][path] = value
        return value


class _RecordedTorch:
    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder

    def snapshot(self) -> dict:
        value = self.recorder.live.torch.snapshot()
        self.recorder.observations["torch"] = value
        return value


class RecordingError(ValueError):
    """A recording that is not a doctor report or observations object."""


def replay(recording: dict) -> Probes:
    """Probes that answer from a recording: a `--json` report, or its `observations` alone."""
    if not isinstance(recording, dict):
        raise RecordingError("a recording is a JSON object")
    observations = recording.get("observations", recording)
    if not isinstance(observations, dict):
        raise RecordingError("`observations` must be a JSON object")
    for key in ("env", "commands", "files", "dirs", "links"):
        if observations.get(key) is not None and not isinstance(observations[key], dict):
            raise RecordingError(f"`observations.{key}` must be a JSON object")
    replayed = _Replay(observations)
    return Probes(replayed, replayed, replayed, replayed)


class _Replay:
    def __init__(self, observations: dict) -> None:
        self.observations = observations

    def _table(self, key: str) -> dict:
        return self.observations.get(key) or {}

    def run(self, argv: Sequence[str]) -> CommandResult:
        seen = self._table("commands").get(command_key(argv))
        if not isinstance(seen, dict):
            return NOT_FOUND
        returncode = seen.get("returncode")
        return CommandResult(True, returncode if isinstance(returncode, int) else None,
                             _text(seen.get("stdout")), _text(seen.get("stderr")))

    def get(self, name: str) -> Optional[str]:
        value = self._table("env").get(name)
        return value if isinstance(value, str) else None

    def platform(self) -> Dict[str, str]:
        value = self.observations.get("platform")
        return value if isinstance(value, dict) else {"system": "Linux", "release": "", "machine": "x86_64"}

    def read_text(self, path: str) -> Optional[str]:
        value = self._table("files").get(path)
        return value if isinstance(value, str) else None

    def listdir(self, path: str) -> Optional[List[str]]:
        value = self._table("dirs").get(path)
        return [str(name) for name in value] if isinstance(value, list) else None

    def link_target(self, path: str) -> Optional[str]:
        value = self._table("links").get(path)
        return value if isinstance(value, str) else None

    def snapshot(self) -> dict:
        value = self.observations.get("torch")
        return dict(value) if isinstance(value, dict) else {"installed": False}


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""
