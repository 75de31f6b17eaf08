"""`devlint doctor`: runs the checklist on this machine (or replays a recording) and
turns the diagnosis into an exit status."""
from __future__ import annotations

import json
import os
import shutil
import sys
from typing import Optional

from . import diagnose
from .model import Diagnosis
from .probes import Probes, live_probes
from .recording import RecordingError, replay
from .render import as_json, as_text

EXIT_OK, EXIT_PROBLEM, EXIT_ERROR = 0, 1, 2


def doctor_command(as_json_output: bool = False, require_accelerator: bool = False, python: Optional[str] = None,
                   replay_file: Optional[str] = None, verbose: bool = False) -> int:
    try:
        probes = _probes(python, replay_file)
    except (OSError, ValueError) as error:
        sys.stderr.write(f"devlint: error: {error}\n")
        return EXIT_ERROR
    if replay_file is None and sys.stderr.isatty() and not as_json_output:
        sys.stderr.write("devlint doctor: looking at the hardware, the driver and PyTorch...\r")
        sys.stderr.flush()
    try:
        diagnosis = diagnose(probes)
    except Exception as error:  # the doctor must answer; a bug of ours is exit 2, with the cause
        sys.stderr.write(f"devlint doctor: internal error: {type(error).__name__}: {error} "
                         "(a bug in devlint: please report it)\n")
        return EXIT_ERROR
    if replay_file is None and sys.stderr.isatty() and not as_json_output:
        sys.stderr.write(" " * 60 + "\r")
    if as_json_output:
        sys.stdout.write(as_json(diagnosis))
    else:
        sys.stdout.write(as_text(diagnosis, verbose, colour=_colour()))
    return exit_status(diagnosis, require_accelerator)


def exit_status(diagnosis: Diagnosis, require_accelerator: bool) -> int:
    """0 when an accelerator is usable. Otherwise 1 with --require-accelerator, or when a
    check failed (hardware that does not work); 0 when there is simply none."""
    if diagnosis.accelerator.usable:
        return EXIT_OK
    if require_accelerator or diagnosis.failed:
        return EXIT_PROBLEM
    return EXIT_OK


def _probes(python: Optional[str], replay_file: Optional[str]) -> Probes:
    if replay_file is not None:
        try:
            with open(replay_file, encoding="utf-8") as handle:
                return replay(json.load(handle))
        except OSError as error:
            raise ValueError(f"cannot read {replay_file}: {error.strerror or error}") from None
        except json.JSONDecodeError as error:
            raise ValueError(f"{replay_file} is not JSON: {error}") from None
        except RecordingError as error:
            raise ValueError(f"{replay_file}: {error}") from None
    if python is not None and shutil.which(python) is None and not os.path.isfile(python):
        raise ValueError(f"no such Python interpreter: {python}")
    return live_probes(python)


def _colour() -> bool:
    return sys.stdout.isatty() and "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb"
