"""The diagnosis as a short checklist for people, or as JSON for scripts (the schema is
in the README and only grows by new keys)."""
from __future__ import annotations

import json
from typing import List

from .. import __version__
from .checks.common import describe
from .model import FAIL, OK, SKIPPED, WARN, Diagnosis

SCHEMA_VERSION = 1
_LABELS = {OK: "ok", WARN: "warn", FAIL: "FAIL", SKIPPED: "skip"}
_COLOURS = {OK: "32", WARN: "33", FAIL: "31", SKIPPED: "2"}
#: Evidence lines shown for a problem unless --verbose shows them all.
SHORT_EVIDENCE = 4


def as_json(diagnosis: Diagnosis) -> str:
    first = diagnosis.first_problem
    document = {
        "schema_version": SCHEMA_VERSION,
        "devlint_version": __version__,
        "accelerator": {"usable": diagnosis.accelerator.usable, "kind": diagnosis.accelerator.kind,
                        "devices": [{"device": device, "name": name} for device, name in diagnosis.accelerator.devices]},
        "first_problem": first.id if first else None,
        "checks": [{"id": c.id, "title": c.title, "status": c.status, "summary": c.summary,
                    "evidence": list(c.evidence), "remedy": c.remedy} for c in diagnosis.checks],
        "observations": diagnosis.observations,
    }
    return json.dumps(document, indent=2) + "\n"


def as_text(diagnosis: Diagnosis, verbose: bool = False, colour: bool = False) -> str:
    def paint(code: str, text: str) -> str:
        return f"\033[{code}m{text}\033[0m" if colour else text

    first = diagnosis.first_problem
    width = max(len(c.title) for c in diagnosis.checks)
    lines = ["devlint doctor: can PyTorch use an accelerator here?", ""]
    for check in diagnosis.checks:
        marker = ">" if check is first else " "
        label = paint(_COLOURS[check.status], f"{_LABELS[check.status]:<4}")
        title = paint("1", f"{check.title:<{width}}") if check is first else f"{check.title:<{width}}"
        lines.append(f"{marker} {label}  {title}  {check.summary}")
        problem = check.status in (FAIL, WARN)
        if verbose or problem:
            evidence = list(check.evidence) if verbose else list(check.evidence[:SHORT_EVIDENCE])
            hidden = len(check.evidence) - len(evidence)
            lines += [f"{'':{width + 10}}{line}" for item in evidence for line in _lines(item, verbose)]
            if hidden:
                lines.append(f"{'':{width + 10}}... {hidden} more (--verbose)")
        if problem and check.remedy:
            lines.append(f"{'':{width + 10}}{paint('36', 'fix:')} {check.remedy}")
    lines.append("")
    lines += _verdict(diagnosis)
    return "\n".join(lines) + "\n"


def _lines(evidence: str, verbose: bool) -> List[str]:
    """A multi-line message (torch's are) as indented lines; its first line unless verbose."""
    lines = [line.rstrip() for line in evidence.strip().splitlines() if line.strip()] or [""]
    return lines if verbose else lines[:1]


def _verdict(diagnosis: Diagnosis) -> List[str]:
    accelerator, first = diagnosis.accelerator, diagnosis.first_problem
    if accelerator.usable:
        devices = describe(name or device for device, name in accelerator.devices)
        verdict = [f"Accelerator usable: {accelerator.kind} on {devices}."]
        if first:
            verdict.append(f"Still worth a look, {first.title}: {first.summary}.")
        return verdict
    if first is None:
        return ["No accelerator is usable."]
    verdict = [f"No accelerator is usable. First problem, {first.title}: {first.summary}."]
    if first.remedy:
        verdict.append(f"Fix: {first.remedy}")
    return verdict
