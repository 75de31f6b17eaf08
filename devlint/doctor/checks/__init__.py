"""The checklist, in the order a problem is found by hand: hardware, driver, framework
build, runtime libraries, visibility, then a proof that a device computes. Each check is
a function of the gathered facts and of the results before it (a later step stays quiet
about a cause an earlier one already named)."""
from __future__ import annotations

from typing import Callable, List

from ..facts import Facts
from ..model import CheckResult
from . import driver, framework, hardware, libraries, proof, visibility

Check = Callable[[Facts, List[CheckResult]], CheckResult]
CHECKS: List[Check] = [hardware.check, driver.check, framework.check, libraries.check, visibility.check, proof.check]


def run_checks(facts: Facts) -> List[CheckResult]:
    results: List[CheckResult] = []
    for check in CHECKS:
        results.append(check(facts, results))
    return results
