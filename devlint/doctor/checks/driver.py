"""Is the vendor's kernel driver loaded, and is it new enough for the CUDA version the
installed torch was built for."""
from __future__ import annotations

from typing import List

from .. import tables
from ..facts import Facts
from ..model import FAIL, OK, SKIPPED, WARN, CheckResult
from ..tool_output import trim
from .common import CONTAINER_REMEDY, WSL_REMEDY, cuda_build_hint, wheel_index

ID, TITLE = "driver", "driver"
NVIDIA_DOWNLOAD = "install the NVIDIA driver (your distribution's package, e.g. `sudo ubuntu-drivers install`, or nvidia.com/drivers), then reboot"


def check(facts: Facts, earlier: List[CheckResult]) -> CheckResult:
    # a readable PCI bus without an NVIDIA GPU outweighs an nvidia-smi that is merely installed
    # (WSL's bus never shows the GPU, so there nvidia-smi's word stands)
    smi_counts = facts.nvidia.listing.found and (facts.pci is None or facts.host.wsl)
    if facts.nvidia_hardware or smi_counts:
        return _nvidia(facts)
    if facts.amd_hardware:
        return _amd(facts)
    if facts.apple:
        return CheckResult(ID, TITLE, SKIPPED, "macOS: Metal is part of the operating system")
    return CheckResult(ID, TITLE, SKIPPED, "no GPU hardware, so no driver to check")


def _nvidia(facts: Facts) -> CheckResult:
    nvidia = facts.nvidia
    if nvidia.listing.found and not nvidia.listing.succeeded:
        return _smi_failed(facts)
    in_bare_container = facts.host.container and not nvidia.device_nodes and not nvidia.listing.found
    if nvidia.driver is None or in_bare_container:  # a container sees the host's module, not its devices
        return _no_driver(facts)
    evidence = [f"driver {nvidia.driver}" + (f", runs CUDA up to {nvidia.driver_cuda} (nvidia-smi)" if nvidia.driver_cuda else "")]
    if not nvidia.listing.found:
        evidence.append("nvidia-smi not installed; version from /proc/driver/nvidia/version")
    built_for = facts.torch.cuda
    if not built_for:
        runs = f", runs CUDA up to {nvidia.driver_cuda}" if nvidia.driver_cuda else ""
        return CheckResult(ID, TITLE, OK, f"NVIDIA driver {nvidia.driver} loaded{runs}", tuple(evidence))
    needed = tables.minimum_driver(built_for, facts.host.system)
    found, needs = tables.parse_version(nvidia.driver), tables.parse_version(needed)
    if needed is None or found is None or needs is None:
        return CheckResult(ID, TITLE, WARN, f"NVIDIA driver {nvidia.driver}; no known minimum for torch's CUDA {built_for}",
                           tuple(evidence), f"check NVIDIA's CUDA compatibility table for CUDA {built_for}")
    evidence.append(f"torch {facts.torch.version} is built for CUDA {built_for}, which needs a driver >= {needed}")
    if found < needs:
        other = f", or {cuda_build_hint(facts)}" if wheel_index(facts) else ""
        return CheckResult(ID, TITLE, FAIL, f"NVIDIA driver {nvidia.driver} is too old for torch's CUDA {built_for} "
                           f"(needs >= {needed})", tuple(evidence), f"update the NVIDIA driver to {needed} or newer{other}")
    return CheckResult(ID, TITLE, OK, f"NVIDIA driver {nvidia.driver} runs torch's CUDA {built_for} (needs >= {needed})",
                       tuple(evidence))


def _smi_failed(facts: Facts) -> CheckResult:
    output = (facts.nvidia.listing.stdout + "\n" + facts.nvidia.listing.stderr).strip()
    evidence = (f"$ nvidia-smi -L  (exit status {facts.nvidia.listing.returncode})", *trim(output))
    if "No devices were found" in output or "No devices found" in output:
        return CheckResult(ID, TITLE, FAIL, "the NVIDIA driver is loaded but finds no GPU", evidence,
                           "look for the GPU on the bus (`lspci | grep -i nvidia`) and for errors in `sudo dmesg`; "
                           "a GPU that fell off the bus needs a reboot, one that is not seated or powered needs hands")
    if "version mismatch" in output:
        remedy = "reboot: the loaded kernel module and the driver libraries differ, usually after a driver upgrade"
    elif facts.nvidia.kernel_module is None:
        remedy = ("the NVIDIA kernel module is not loaded (often after a kernel update): reboot, or reinstall the "
                  "driver so that DKMS builds it for this kernel; `sudo modprobe nvidia` shows the error")
    else:
        remedy = "nvidia-smi cannot reach the driver: look for Xid errors in `sudo dmesg`; the GPU may need a reset or a reboot"
    return CheckResult(ID, TITLE, FAIL, "nvidia-smi cannot talk to the NVIDIA driver", evidence, remedy)


def _no_driver(facts: Facts) -> CheckResult:
    if facts.host.container and not facts.nvidia.device_nodes:
        host_module = [f"the host's kernel module {facts.nvidia.kernel_module} is loaded"] if facts.nvidia.kernel_module else []
        return CheckResult(ID, TITLE, FAIL, "this container was started without GPU access: no /dev/nvidia* devices",
                           (f"container: {facts.host.container}", "nvidia-smi: not installed", "/dev/nvidia*: none",
                            *host_module), CONTAINER_REMEDY["NVIDIA"])
    if facts.host.wsl:
        return CheckResult(ID, TITLE, FAIL, "no NVIDIA driver reachable from WSL", ("nvidia-smi: not found",), WSL_REMEDY)
    evidence = ["nvidia-smi: not installed", "/proc/driver/nvidia/version: absent (no NVIDIA kernel module loaded)"]
    bound = sorted({gpu.driver for gpu in facts.pci_gpus("NVIDIA") if gpu.driver})
    evidence += [f"the GPU is bound to the {name} kernel driver" for name in bound]
    remedy = NVIDIA_DOWNLOAD
    if "nouveau" in bound:
        remedy += "; the open-source nouveau driver holds the GPU now and must be blacklisted (the installers offer to)"
    if "vfio-pci" in bound:
        remedy = "the GPU is reserved for virtual machines (bound to vfio-pci): release it from vfio-pci, then " + remedy
    return CheckResult(ID, TITLE, FAIL, "no NVIDIA driver is installed or loaded", tuple(evidence), remedy)


def _amd(facts: Facts) -> CheckResult:
    rocm = f"ROCm {facts.amd.rocm}" if facts.amd.rocm else "no ROCm installation in /opt/rocm"
    if facts.amd.kfd:
        return CheckResult(ID, TITLE, OK, f"amdgpu driver loaded (/dev/kfd); {rocm}", ("/dev/kfd: present", rocm))
    if facts.host.container:
        return CheckResult(ID, TITLE, FAIL, "this container was started without GPU access: no /dev/kfd",
                           (f"container: {facts.host.container}", "/dev/kfd: absent"), CONTAINER_REMEDY["AMD"])
    # a graphics device seen only on the PCI bus may be an integrated GPU that ROCm does not serve
    status = FAIL if facts.amd.gpus else WARN
    return CheckResult(ID, TITLE, status, "the amdgpu compute driver is not loaded: no /dev/kfd", ("/dev/kfd: absent", rocm),
                       "install the AMD GPU driver with ROCm support (`amdgpu-install --usecase=rocm`), then reboot")
