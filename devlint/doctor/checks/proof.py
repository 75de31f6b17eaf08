"""The end-to-end proof: on each device torch can use, allocate, multiply and copy the
result back, and say how long it took (the first use includes starting the device)."""
from __future__ import annotations

from typing import List

from ..facts import Facts
from ..model import FAIL, OK, SKIPPED, WARN, CheckResult

ID, TITLE = "proof", "end-to-end proof"


def check(facts: Facts, earlier: List[CheckResult]) -> CheckResult:
    proofs = facts.torch.records("proofs")
    if not proofs:
        if facts.torch.text("stage") == "proofs":
            return CheckResult(ID, TITLE, FAIL, "the proof crashed the process", (facts.torch.text("probe_error") or "",),
                               "look for Xid errors in `sudo dmesg`; the GPU may need a reset or a reboot")
        return CheckResult(ID, TITLE, SKIPPED, "no usable device to try")
    names = {f"cuda:{d.get('index')}": d.get("name") for d in facts.torch.devices}
    evidence = tuple(_line(proof, names.get(str(proof.get("device")))) for proof in proofs)
    passed = [p for p in proofs if p.get("ok") is True]
    if len(passed) == len(proofs):
        slowest = max(_ms(p) for p in proofs)
        return CheckResult(ID, TITLE, OK, f"computed on {len(proofs)} of {len(proofs)} devices "
                           f"(slowest {slowest:.0f} ms, including start-up)", evidence)
    failed = [p for p in proofs if p.get("ok") is not True]
    first_error = str(failed[0].get("error") or "").strip().split("\n")[0]
    remedy = ("install a torch build with kernels for this GPU (see the framework check)"
              if "no kernel image" in first_error else
              "look for Xid errors in `sudo dmesg`; a GPU that fails here may need a reset, or be faulty")
    status = WARN if passed else FAIL
    return CheckResult(ID, TITLE, status, f"failed on {len(failed)} of {len(proofs)} devices: {first_error[:120]}",
                       evidence, remedy)


def _line(proof: dict, name) -> str:
    device = f"{proof.get('device')}" + (f" ({name})" if name else "")
    if proof.get("ok") is True:
        return f"{device}: ok in {_ms(proof):.1f} ms"
    return f"{device}: {proof.get('error')}"


def _ms(proof: dict) -> float:
    value = proof.get("ms")
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0
