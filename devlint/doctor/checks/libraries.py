"""The runtime libraries a GPU build needs: cuDNN as torch sees it, and libcudart, either
shipped with torch or found by the loader when torch relies on a system CUDA."""
from __future__ import annotations

from typing import List

from ..facts import Facts
from ..model import FAIL, OK, SKIPPED, WARN, CheckResult
from ..tool_output import cudnn_version, missing_library

ID, TITLE = "libraries", "runtime libraries"


def check(facts: Facts, earlier: List[CheckResult]) -> CheckResult:
    torch = facts.torch
    library = missing_library(torch.text("import_error") or "")
    if library:
        return CheckResult(ID, TITLE, FAIL, f"{library} cannot be loaded", (torch.text("import_error") or "",),
                           f"install the package that provides {library} (for pip wheels, reinstall torch so its "
                           "nvidia-* dependencies come back), or add its folder to LD_LIBRARY_PATH")
    if not torch.installed:
        return CheckResult(ID, TITLE, SKIPPED, "torch is not importable")
    if torch.hip:
        hip = torch.libraries.get("libamdhip64")
        return CheckResult(ID, TITLE, OK, "ROCm runtime" + (f" loaded from {hip}" if hip else " shipped with torch"),
                           (f"libamdhip64: {hip or 'not loaded by the probe'}",))
    if not torch.cuda:
        return CheckResult(ID, TITLE, SKIPPED, "this torch build loads no CUDA libraries")
    return _cuda(facts)


def _cuda(facts: Facts) -> CheckResult:
    torch = facts.torch
    loaded = torch.libraries
    bundled = torch.strings("bundled_cudart")
    cudnn = cudnn_version(torch.snapshot.get("cudnn"))
    evidence = [f"cuDNN: {cudnn or 'not available'} (torch.backends.cudnn)"]
    if loaded.get("libcudart"):
        evidence.append(f"libcudart: loaded from {loaded['libcudart']}")
    elif bundled:
        evidence.append(f"libcudart: shipped with torch ({bundled[0]})")
    if loaded.get("libcuda"):
        evidence.append(f"libcuda (the driver's): {loaded['libcuda']}")
    if not bundled and not loaded.get("libcudart"):  # torch relies on the system's CUDA runtime
        found = torch.text("loader_cudart")
        evidence.append(f"libcudart: torch ships none; the loader finds {found or 'none'}")
        if not found and _gpu_machine(facts):
            return CheckResult(ID, TITLE, FAIL, "torch relies on a system CUDA, and the loader finds no libcudart",
                               tuple(evidence), f"install the CUDA runtime for torch's CUDA {torch.cuda}, "
                               "or add the folder holding libcudart.so to LD_LIBRARY_PATH")
    if not cudnn:
        return CheckResult(ID, TITLE, WARN, "cuDNN is not available to torch: convolutions and RNNs run slower",
                           tuple(evidence), "reinstall torch with pip, whose CUDA wheels bring cuDNN (nvidia-cudnn-*)")
    return CheckResult(ID, TITLE, OK, f"cuDNN {cudnn}" + (", libcudart loaded" if loaded.get("libcudart") else ""),
                       tuple(evidence))


def _gpu_machine(facts: Facts) -> bool:
    return facts.nvidia_hardware and facts.nvidia.driver is not None
