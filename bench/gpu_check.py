#!/usr/bin/env python3
"""Helpers for bench/gpu_check.sh: which fixtures to run, one traced run, the verdicts.

    python bench/gpu_check.py select                 # crash-class fixtures, one path a line
    python bench/gpu_check.py verdict OUTDIR PROGRAM ...

The traced runs themselves are `devlint trace --out NAME.json PROGRAM`; a verdict
reads the report's failing line and the user lines that called it (`callers`),
so a mismatch in `forward` counts for the `model(x)` line that called it.
"""
from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURE_DIRS = ("fixtures/placement", "fixtures/parallel")
_EXPECT = re.compile(r"#\s*expect:\s*(?P<codes>DEV\d{3}(?:\s*,\s*DEV\d{3})*)")
_SKIP = re.compile(r"^#\s*fixture-run:\s*skip\b", re.MULTILINE)

# What PyTorch says when tensors or modules sit on the wrong device. An
# "invalid device ordinal" is left out on purpose: on a one-GPU machine it
# says the program wants more GPUs, not that its placement is wrong.
_DEVICE_ERRORS = re.compile("|".join((
    r"Expected all tensors to be on the same device",
    r"at least two devices",
    r"device type tensor to numpy",
    r"Expected object of device type",
    r"Input type \(.*\) and weight type \(.*\) should be the same",
    r"tensors are not at the same device",
    r"indices should be either on cpu or on the same device",
    r"must have its parameters and buffers on device",
    r"(is|are) on (CPU|cpu|cuda:?\d*), but expected",
)))
_DEVICE_EVENTS = ("device-mismatch", "numpy-on-accelerator")


def expected_lines(path: Path) -> dict[int, list[str]]:
    """Lines whose `# expect:` names a DEV1xx/DEV2xx rule of severity error."""
    from devlint.rules import RULES_BY_CODE

    found: dict[int, list[str]] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        match = _EXPECT.search(line)
        if not match:
            continue
        for code in (c.strip() for c in match.group("codes").split(",")):
            rule = RULES_BY_CODE.get(code)
            if code[:4] in ("DEV1", "DEV2") and rule is not None and rule.severity == "error":
                found.setdefault(number, []).append(code)
    return found


def select() -> list[Path]:
    # Originals only: a `.fixed.py` twin carries its original's comments but
    # is the repaired program, not a crash.
    chosen = []
    for folder in FIXTURE_DIRS:
        for path in sorted((ROOT / folder).glob("*.py")):
            if path.name.endswith(".fixed.py") or _SKIP.search(path.read_text(encoding="utf-8")):
                continue
            if expected_lines(path):
                chosen.append(path)
    return chosen


def verdict(out: Path, program: Path) -> str:
    name = f"{program.parent.name}/{program.name}"
    stem = out / f"{program.parent.name}__{program.stem}"
    expected = expected_lines(program)
    want = ", ".join(f"{line}:{'/'.join(codes)}" for line, codes in sorted(expected.items()))
    rc_file = stem.with_suffix(".rc")
    rc = rc_file.read_text().strip() if rc_file.exists() else None
    if rc is None:
        return f"not run       {name}  (time budget spent; expected {want})"
    if rc in ("124", "137"):
        return f"NOT confirmed {name}  (timed out; expected {want})"
    try:
        report = json.loads(stem.with_suffix(".json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return f"NOT confirmed {name}  (exit {rc}, no report; see {stem.name}.log)"
    same = os.path.realpath(program)
    exc = report.get("exception") or {}
    device_error = bool(exc) and bool(_DEVICE_ERRORS.search(f"{exc.get('message')}"))
    # The failing user line and the user lines that called it (a mismatch in `forward`
    # counts for the `model(x)` line).
    chain = ([[exc["file"], exc["line"]]] if exc.get("file") else []) + exc.get("callers", [])
    lines = {line for file, line in chain if os.path.realpath(file) == same}
    events = [e for e in report.get("events", []) if e["kind"] in _DEVICE_EVENTS]
    event_lines = {line for e in events for file, line in [[e["file"], e["line"]], *e.get("callers", [])]
                   if os.path.realpath(file) == same}
    hits = sorted(((lines if device_error else set()) | event_lines) & set(expected))
    if not expected and (device_error or event_lines):
        # The demo has no `# expect:` lines: any device error in it is the point.
        hits = sorted((lines if device_error else set()) | event_lines)
        want = "any line"
    where = f"{report.get('mode')}, {report.get('gpus')} GPU(s), exit {report.get('exit_status')}"
    if hits:
        return f"confirmed     {name}  (line {', '.join(map(str, hits))}; {where})"
    if device_error or events:
        at = exc.get("line") if device_error else events[0]["line"]
        return (f"NOT confirmed {name}  (device error at line {at}, not at or through "
                f"{want}; {where})")
    what = f"{exc.get('type')}: {str(exc.get('message'))[:100]}" if exc else "no device error"
    return f"NOT confirmed {name}  ({what}; {where})"


def main() -> int:
    if len(sys.argv) < 2 or sys.argv[1] not in ("select", "verdict"):
        sys.stderr.write(__doc__)
        return 2
    command, args = sys.argv[1], sys.argv[2:]
    if command == "select":
        for path in select():
            print(path.relative_to(ROOT))
        return 0
    out = Path(args[0])
    lines = [verdict(out, Path(p).resolve()) for p in args[1:]]
    print("\n".join(lines))
    confirmed = sum(line.startswith("confirmed") for line in lines)
    print(f"{confirmed} of {len(lines)} confirmed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
