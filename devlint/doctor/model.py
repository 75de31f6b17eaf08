"""What a diagnosis is made of: checks with a status, their evidence and a remedy."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional, Tuple

OK, WARN, FAIL, SKIPPED = "ok", "warn", "fail", "skipped"


@dataclass(frozen=True)
class CheckResult:
    """One step of the checklist. `summary` is one line; `evidence` holds what was seen
    (command output, values), trimmed; `remedy` is one line, or None when nothing is to be done."""

    id: str
    title: str
    status: str
    summary: str
    evidence: Tuple[str, ...] = ()
    remedy: Optional[str] = None


@dataclass(frozen=True)
class Accelerator:
    """The accelerator PyTorch can use, if any: its kind (cuda, rocm, mps) and its devices
    as (torch device, name) pairs."""

    usable: bool
    kind: Optional[str] = None
    devices: Tuple[Tuple[str, str], ...] = ()


@dataclass
class Diagnosis:
    checks: List[CheckResult]
    accelerator: Accelerator
    observations: dict = field(default_factory=dict)

    @property
    def first_problem(self) -> Optional[CheckResult]:
        """The first failing check; failing that, the first warning."""
        for status in (FAIL, WARN):
            for check in self.checks:
                if check.status == status:
                    return check
        return None

    @property
    def failed(self) -> bool:
        return any(check.status == FAIL for check in self.checks)
