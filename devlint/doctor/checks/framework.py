"""Which torch is installed and what it was built for: CUDA, ROCm, MPS or the CPU only,
and whether that build fits this machine's GPUs."""
from __future__ import annotations

from typing import List, Optional, Tuple

from .. import tables
from ..facts import Facts
from ..model import FAIL, OK, WARN, CheckResult
from ..tool_output import missing_library
from .common import cuda_build_hint, rocm_build_hint

ID, TITLE = "framework", "PyTorch build"
OTHER_PYTHON = "if torch lives in another environment, point the doctor at it: `devlint doctor --python /path/to/env/bin/python`"
#: The probe's steps that start the GPU (torch_probe.py); a crash there is the driver's or the GPU's.
INIT_STAGES = ("availability", "devices")
#: Fragments of torch's own warning when a GPU is newer than the build's kernels.
TOO_NEW_WARNINGS = ("not compatible with the current PyTorch installation", "which is of compute capability")


def check(facts: Facts, earlier: List[CheckResult]) -> CheckResult:
    torch = facts.torch
    if not torch.installed:
        return _not_importable(facts)
    built = [f"torch.__version__ = {torch.version}", f"torch.version.cuda = {torch.cuda}",
             f"torch.version.hip = {torch.hip}", f"python: {torch.python}"]
    crashed = torch.text("probe_error")
    if crashed and torch.text("stage") in INIT_STAGES:
        return CheckResult(ID, TITLE, FAIL, f"torch {torch.version} crashed or hung while starting the GPU",
                           tuple(built + [crashed]), "look for Xid errors in `sudo dmesg` and at `nvidia-smi -q`; "
                           "a GPU reset (`sudo nvidia-smi -r`) or a reboot usually clears a wedged GPU")
    if torch.cpu_only:
        return _cpu_only(facts, tuple(built))
    if torch.hip:
        if facts.nvidia_hardware and not facts.amd_hardware:
            return CheckResult(ID, TITLE, FAIL, f"torch {torch.version} is a ROCm build (HIP {torch.hip}), "
                               "but this machine's GPUs are NVIDIA", tuple(built), cuda_build_hint(facts))
        return _availability(facts, f"torch {torch.version}, built for ROCm (HIP {torch.hip})", built)
    if torch.cuda:
        if facts.amd.gpus and not facts.nvidia_hardware:
            return CheckResult(ID, TITLE, FAIL, f"torch {torch.version} is a CUDA build, but this machine's GPUs are AMD",
                               tuple(built), rocm_build_hint(facts))
        if facts.amd_hardware:  # AMD graphics on the PCI bus only: perhaps an integrated GPU
            return CheckResult(ID, TITLE, WARN, f"torch {torch.version} is a CUDA build, on a machine with AMD graphics",
                               tuple(built), f"if it is a GPU that ROCm supports, {rocm_build_hint(facts)}")
        too_new = _too_new(facts)
        if too_new:
            name, capability = too_new
            return CheckResult(ID, TITLE, FAIL, f"torch {torch.version} has no kernels for {name}",
                               tuple(built + [f"built for: {' '.join(torch.strings('arch_list'))}"] + _too_new_warnings(facts)),
                               _newer_build(capability))
        return _availability(facts, f"torch {torch.version}, built for CUDA {torch.cuda}", built)
    return CheckResult(ID, TITLE, OK, f"torch {torch.version} with the Metal (MPS) backend", tuple(built))


def _not_importable(facts: Facts) -> CheckResult:
    torch = facts.torch
    error, probe_error = torch.text("import_error"), torch.text("probe_error")
    if error:
        library = missing_library(error)
        remedy = (f"torch cannot load {library}: reinstall torch with pip (its wheels bring the CUDA libraries as "
                  f"nvidia-* packages), or add the folder holding {library} to LD_LIBRARY_PATH" if library else
                  "reinstall torch: pip install --force-reinstall torch")
        return CheckResult(ID, TITLE, FAIL, "`import torch` fails", (f"python: {torch.python}", error), remedy)
    if probe_error:
        return CheckResult(ID, TITLE, FAIL, f"could not ask PyTorch: {probe_error}", (f"python: {torch.python}",),
                           f"run `{torch.python} -c \"import torch\"` to see the error")
    install = cuda_build_hint(facts) if facts.nvidia_hardware else "pip install torch"
    return CheckResult(ID, TITLE, FAIL, f"PyTorch is not installed for {torch.python}", (f"python: {torch.python}",),
                       f"{install}; {OTHER_PYTHON}")


def _cpu_only(facts: Facts, built: tuple) -> CheckResult:
    torch = facts.torch
    summary = f"torch {torch.version} is a CPU-only build"
    if facts.nvidia_hardware:
        return CheckResult(ID, TITLE, FAIL, summary + ", on a machine with NVIDIA GPUs", built, cuda_build_hint(facts))
    if facts.amd.gpus:
        return CheckResult(ID, TITLE, FAIL, summary + ", on a machine with AMD GPUs", built, rocm_build_hint(facts))
    if facts.amd_hardware:  # seen on the PCI bus only: perhaps an integrated GPU, which ROCm rarely serves
        return CheckResult(ID, TITLE, WARN, summary + ", on a machine with AMD graphics", built,
                           f"if it is a GPU that ROCm supports, {rocm_build_hint(facts)}")
    if facts.apple:
        return CheckResult(ID, TITLE, WARN, summary + ", without the MPS backend", built,
                           "pip install --upgrade torch (the macOS arm64 wheels include MPS)")
    index = tables.wheel_index_for_driver(torch.version, None)
    return CheckResult(ID, TITLE, WARN, summary + " (right for a machine without a GPU)", built,
                       f"on a machine with an NVIDIA GPU, install a CUDA build that its driver runs (`nvidia-smi` shows "
                       f"the CUDA version), e.g. {tables.reinstall_hint(torch.version, index)}")


def _availability(facts: Facts, summary: str, built: List[str]) -> CheckResult:
    torch = facts.torch
    if torch.flag("cuda_available"):
        return CheckResult(ID, TITLE, OK, summary, tuple(built + ["torch.cuda.is_available() = True"]))
    evidence = tuple(built + ["torch.cuda.is_available() = False"] + [f"torch says: {r}" for r in torch.reasons])
    if not (facts.nvidia_hardware or facts.amd_hardware):
        return CheckResult(ID, TITLE, OK, summary + " (no GPU here for it to use)", evidence)
    return CheckResult(ID, TITLE, WARN, summary + ", but torch.cuda.is_available() is False", evidence,
                       "the first failing check names the cause" if torch.reasons else None)


def _too_new(facts: Facts) -> Optional[Tuple[str, Optional[tuple]]]:
    """The first device this CUDA build has neither machine code nor PTX for: its name and capability."""
    arch_list = facts.torch.strings("arch_list")
    for device in facts.torch.devices:
        capability = tables.parse_version(str(device.get("capability") or ""))
        if not capability or len(capability) != 2 or not arch_list:
            continue
        if not _runs(capability, arch_list):
            return f"{device.get('name')} (sm_{capability[0]}{capability[1]})", capability
    if _too_new_warnings(facts):
        return "this GPU", None
    return None


def _newer_build(capability: Optional[tuple]) -> str:
    cuda = tables.first_cuda_for(capability) if capability else None
    if cuda is None:
        return f"install a newer torch release whose CUDA build supports this GPU, see {tables.INSTALL_PAGE}"
    return (f"install a torch build for CUDA {cuda} or newer, which has kernels for this GPU, e.g. "
            f"pip install --upgrade torch --index-url {tables.wheel_index_at_least(cuda)}")


def _runs(capability: tuple, arch_list: List[str]) -> bool:
    major, minor = capability
    for arch in arch_list:
        kind, _, digits = arch.partition("_")
        if not (digits.isdigit() and len(digits) >= 2):  # sm_90a and friends run on their exact GPU only
            if arch == f"sm_{major}{minor}a":
                return True
            continue
        built_major, built_minor = int(digits[:-1]), int(digits[-1])
        if kind == "sm" and built_major == major and built_minor <= minor:
            return True  # machine code runs on later GPUs of the same major
        if kind == "compute" and (built_major, built_minor) <= (major, minor):
            return True  # PTX is compiled for the GPU at load time
    return False


def _too_new_warnings(facts: Facts) -> List[str]:
    return [f"torch says: {w}" for w in facts.torch.reasons if any(f in w for f in TOO_NEW_WARNINGS)]
