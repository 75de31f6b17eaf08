"""Which devices torch is allowed to see: CUDA_VISIBLE_DEVICES and its ROCm cousins,
containers, WSL, and the devices torch finally counts."""
from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

from ..facts import Facts
from ..model import FAIL, OK, SKIPPED, WARN, CheckResult
from ..tool_output import Gpu
from .common import describe, plural

ID, TITLE = "visibility", "device visibility"
#: torch's reasons for seeing no device, and what to do about each.
REASON_REMEDIES = (
    ("no NVIDIA driver", "install the NVIDIA driver, then reboot"),
    ("too old", "update the NVIDIA driver, or install the torch build for the CUDA version it runs"),
    ("unknown error", "load the nvidia_uvm module (`sudo modprobe nvidia_uvm`) or reboot; this error also follows "
                      "a suspend/resume, or CUDA_VISIBLE_DEVICES changed after the program started"),
    ("No CUDA GPUs are available", "CUDA sees no device: check CUDA_VISIBLE_DEVICES and, in a container, `--gpus all`"),
    ("initialization failed", "look for errors in `sudo dmesg`, then reinstall the driver or reboot"),
)
DEFAULT_REMEDY = "run `python -c \"import torch; torch.cuda.init()\"` for the full error, and look in `sudo dmesg`"


def check(facts: Facts, earlier: List[CheckResult]) -> CheckResult:
    torch = facts.torch
    context = _context(facts)
    hidden = _hidden(facts)
    if hidden:
        status, summary, remedy = hidden
        return CheckResult(ID, TITLE, status, summary, context, remedy)
    if torch.flag("mps_built") and not (torch.cuda or torch.hip):
        return _mps(facts, earlier, context)
    if not torch.installed or not (torch.cuda or torch.hip):
        return CheckResult(ID, TITLE, SKIPPED, "no GPU build of torch to see devices", context)
    count = len(torch.devices)
    if count:
        names = [str(d.get("name")) for d in torch.devices]
        listed = len(facts.nvidia.gpus) if torch.cuda else len(facts.amd.gpus)
        evidence = context + tuple(f"{d.get('index')}: {d.get('name')}, {d.get('memory_gib')} GiB" for d in torch.devices)
        if listed > count and not _set_variables(facts):
            return CheckResult(ID, TITLE, WARN, f"torch sees {count} of the {listed} GPUs the vendor tool lists",
                               evidence, "a GPU may be in use exclusively, failed or hidden; `nvidia-smi -q` shows its state")
        return CheckResult(ID, TITLE, OK, f"torch sees {plural(count, 'device')}: {describe(names)}", evidence)
    failed = [result for result in earlier if result.status == FAIL]
    if failed:
        return CheckResult(ID, TITLE, SKIPPED, f"torch sees no device; the {failed[0].id} check above says why", context)
    if not (facts.amd_hardware if torch.hip else facts.nvidia_hardware):
        vendor = "AMD" if torch.hip else "NVIDIA"
        return CheckResult(ID, TITLE, SKIPPED, f"torch sees no device, and there is no {vendor} GPU for this build", context)
    reasons = torch.reasons
    evidence = context + tuple(f"torch says: {reason}" for reason in reasons)
    return CheckResult(ID, TITLE, FAIL, "torch sees no device", evidence, _remedy_for(reasons))


def _context(facts: Facts) -> Tuple[str, ...]:
    lines = [f"{name}={value!r}" for name, value in _set_variables(facts)]
    if facts.host.container:
        lines.append(f"in a container ({facts.host.container})")
    if facts.host.wsl:
        lines.append("under WSL" + (" with GPU paravirtualisation (/dev/dxg)" if facts.host.wsl_gpu else ""))
    return tuple(lines)


def _set_variables(facts: Facts) -> List[Tuple[str, str]]:
    return [(name, value) for name, value in facts.env.items() if value is not None and name != "WSL_DISTRO_NAME"]


def _hidden(facts: Facts) -> Optional[Tuple[str, str, str]]:
    """A visibility variable that hides some or all GPUs: (status, summary, remedy)."""
    names = ("HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES") if facts.torch.hip \
        else ("CUDA_VISIBLE_DEVICES",)
    gpus = facts.nvidia.gpus if not facts.torch.hip else [Gpu(i, n) for i, n in enumerate(facts.amd.gpus)]
    for name in names:
        value = facts.env.get(name)
        if value is None:
            continue
        visible, stopped_at = parse_visible(value, gpus, facts.nvidia.mig_uuids)
        remedy = f"unset {name}, or list devices that exist" + (f" (0 to {len(gpus) - 1})" if gpus else "")
        if not visible:
            why = "set but empty" if not value.strip() else f"{value!r}"
            return FAIL, f"{name} is {why}: it hides every GPU", remedy
        if stopped_at is not None:
            return WARN, (f"{name}={value!r}: {stopped_at!r} is not a device here, so only {', '.join(visible)} "
                          "(the devices before it) are used"), remedy
    return None


def parse_visible(value: str, gpus: Sequence[Gpu], mig_uuids: Sequence[str]) -> Tuple[List[str], Optional[str]]:
    """The devices a CUDA_VISIBLE_DEVICES value leaves visible, and the entry where
    enumeration stopped (CUDA ignores everything from the first invalid entry on)."""
    uuids = [gpu.uuid for gpu in gpus if gpu.uuid] + list(mig_uuids)
    visible: List[str] = []
    for entry in (part.strip() for part in value.split(",")):
        if entry.startswith(("GPU-", "MIG-")):
            valid = not uuids or any(uuid.startswith(entry) for uuid in uuids)
        else:
            valid = entry.isdigit() and (not gpus or int(entry) < len(gpus))
        if not valid or entry in visible:
            return ([] if entry in visible else visible), entry
        visible.append(entry)
    return visible, None


def _mps(facts: Facts, earlier: List[CheckResult], context: Tuple[str, ...]) -> CheckResult:
    if facts.torch.flag("mps_available"):
        return CheckResult(ID, TITLE, OK, "the MPS device is available", context)
    if any(result.status == FAIL for result in earlier):
        return CheckResult(ID, TITLE, SKIPPED, "MPS is not available; see the failing check above", context)
    return CheckResult(ID, TITLE, FAIL, "torch has the MPS backend, but MPS is not available",
                       context + ("torch.backends.mps.is_available() = False",),
                       "MPS needs macOS 12.3 or later on Apple silicon (or a Metal-capable AMD GPU) and a native arm64 Python")


def _remedy_for(reasons: List[str]) -> str:
    for reason in reasons:
        for fragment, remedy in REASON_REMEDIES:
            if fragment in reason:
                return remedy
    return DEFAULT_REMEDY
