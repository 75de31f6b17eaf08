"""`devlint doctor`: why this machine's PyTorch does or does not use an accelerator.

probes (commands, environment, files, torch) -> facts -> checks -> a Diagnosis, which
`render` prints as a checklist or as JSON. Tests replay recorded probes."""
from __future__ import annotations

from .checks import run_checks
from .facts import Facts, gather
from .model import Accelerator, CheckResult, Diagnosis
from .probes import Probes
from .recording import Recorder


def diagnose(probes: Probes) -> Diagnosis:
    """Runs the checklist through `probes`, keeping what they saw as the observations."""
    recorder = Recorder(probes)
    facts = gather(recorder.probes())
    return Diagnosis(run_checks(facts), accelerator(facts), recorder.observations)


def accelerator(facts: Facts) -> Accelerator:
    """Usable means a device computed the proof correctly, not merely that one is listed."""
    names = {f"cuda:{d.get('index')}": str(d.get("name")) for d in facts.torch.devices}
    proven = [p for p in facts.torch.records("proofs") if p.get("ok") is True]
    if not proven:
        return Accelerator(False)
    devices = tuple((str(p.get("device")), "Apple GPU" if p.get("device") == "mps" else names.get(str(p.get("device")), ""))
                    for p in proven)
    kind = "mps" if proven[0].get("device") == "mps" else ("rocm" if facts.torch.hip else "cuda")
    return Accelerator(True, kind, devices)


__all__ = ["Accelerator", "CheckResult", "Diagnosis", "Probes", "diagnose"]
