"""Is there GPU hardware at all: NVIDIA (nvidia-smi, else the PCI bus), AMD (rocm-smi or
rocminfo, else the PCI bus), Apple silicon."""
from __future__ import annotations

from typing import List

from ..facts import Facts
from ..model import FAIL, OK, WARN, CheckResult
from ..tool_output import trim
from .common import CONTAINER_REMEDY, WSL_REMEDY, describe, plural

ID, TITLE = "hardware", "GPU hardware"


def check(facts: Facts, earlier: List[CheckResult]) -> CheckResult:
    if facts.nvidia.gpus:
        names = [gpu.name for gpu in facts.nvidia.gpus]
        return CheckResult(ID, TITLE, OK, f"{plural(len(names), 'NVIDIA GPU')}: {describe(names)}",
                           ("$ nvidia-smi -L", *trim(facts.nvidia.listing.stdout, lines=8)))
    if facts.amd.gpus:
        return CheckResult(ID, TITLE, OK, f"{plural(len(facts.amd.gpus), 'AMD GPU')}: {describe(facts.amd.gpus)}",
                           tuple(trim(facts.amd.listing.stdout, lines=8)))
    on_bus = facts.pci_gpus("NVIDIA") or facts.pci_gpus("AMD")
    if on_bus:
        vendor = on_bus[0].vendor
        evidence = tuple(f"PCI {gpu.slot}: {gpu.vendor} device {gpu.device_id}, kernel driver: {gpu.driver or 'none'}"
                         for gpu in on_bus)
        tool = "nvidia-smi" if vendor == "NVIDIA" else "rocm-smi"
        return CheckResult(ID, TITLE, OK, f"{plural(len(on_bus), vendor + ' GPU')} on the PCI bus "
                           f"({tool} did not list {'it' if len(on_bus) == 1 else 'them'})", evidence)
    if facts.apple:
        return _apple(facts)
    if facts.host.wsl:  # from inside WSL, a Windows driver without WSL support looks like no GPU
        return CheckResult(ID, TITLE, WARN,
                           "WSL with GPU paravirtualisation (/dev/dxg), but no NVIDIA GPU listed" if facts.host.wsl_gpu
                           else "WSL without GPU access: no /dev/dxg and no nvidia-smi",
                           _searched(facts), "if Windows has an NVIDIA GPU, " + WSL_REMEDY)
    if facts.host.container and facts.pci is None:
        return CheckResult(ID, TITLE, WARN, "no GPU visible inside this container",
                           (f"container: {facts.host.container}", *_searched(facts)),
                           "if the host has GPUs, " + CONTAINER_REMEDY["NVIDIA"])
    container = (f"container: {facts.host.container} (its PCI listing is the host's)",) if facts.host.container else ()
    return CheckResult(ID, TITLE, WARN, "no NVIDIA, AMD or Apple GPU on this machine",
                       _searched(facts) + container,
                       "PyTorch runs on the CPU here; use a machine with a GPU to train on one "
                       "(`devlint trace` simulates GPUs for tests)")


def _apple(facts: Facts) -> CheckResult:
    machine = facts.host.machine
    if facts.host.rosetta:
        return CheckResult(ID, TITLE, FAIL, "Apple silicon, but this Python is an x86-64 build running under Rosetta",
                           ("sysctl.proc_translated = 1", f"platform.machine() = {machine}"),
                           "install a native arm64 Python (and torch in it): MPS is not available under Rosetta")
    if machine == "arm64":
        return CheckResult(ID, TITLE, OK, "Apple silicon: the Metal (MPS) backend", (f"macOS {facts.host.release}, {machine}",))
    return CheckResult(ID, TITLE, WARN, "Intel Mac: no CUDA; MPS needs a Metal-capable AMD GPU",
                       (f"macOS {facts.host.release}, {machine}",))


def _searched(facts: Facts) -> tuple:
    """Where we looked, so 'no GPU' can be believed."""
    seen = [f"nvidia-smi: {'not installed' if not facts.nvidia.listing.found else 'lists no GPU'}",
            f"rocm-smi / rocminfo: {'not installed' if not facts.amd.listing.found else 'list no GPU'}"]
    if facts.pci is None:
        seen.append("PCI bus: no listing readable (/sys/bus/pci/devices)")
    else:
        seen.append(f"PCI bus: {plural(facts.pci_devices, 'device')}, none of them an NVIDIA or AMD GPU")
    return tuple(seen)
