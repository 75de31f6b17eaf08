"""Reading what the vendor tools print. Every parser is lenient: a line it does not
understand is skipped, never an error, since formats drift between driver releases."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import List, Optional, Tuple

_SMI_GPU = re.compile(r"^GPU (\d+): (.+?)(?: \(UUID: ([^)]*)\))?\s*$")
_SMI_MIG = re.compile(r"^\s+MIG .*\(UUID: ([^)]*)\)")
_DRIVER = re.compile(r"Driver Version:\s*([\d.]+)")
_CUDA = re.compile(r"CUDA Version:\s*([\d.]+)")
_NVRM = re.compile(r"Kernel Module(?: for \S+)?\s+(\d+\.\d+(?:\.\d+)?)")
_ROCM_SMI = re.compile(r"^\s*(?:GPU|HCU)\[(\d+)\]\s*:\s*Card [Ss]eries:\s*(.+?)\s*$")
_LIBRARY = re.compile(r"(lib[\w.+-]*?\.(?:so(?:\.[\d.]+)?|dylib)|[\w.-]+\.dll)")


@dataclass(frozen=True)
class Gpu:
    index: int
    name: str
    uuid: Optional[str] = None


def smi_gpus(text: str) -> Tuple[List[Gpu], List[str]]:
    """`nvidia-smi -L`: the GPUs, and the UUIDs of their MIG slices."""
    gpus, migs = [], []
    for line in text.splitlines():
        gpu = _SMI_GPU.match(line)
        if gpu:
            uuid = gpu.group(3) if gpu.group(3) and gpu.group(3) != "N/A" else None
            gpus.append(Gpu(int(gpu.group(1)), gpu.group(2).strip(), uuid))
            continue
        mig = _SMI_MIG.match(line)
        if mig:
            migs.append(mig.group(1))
    return gpus, migs


def smi_versions(text: str) -> Tuple[Optional[str], Optional[str]]:
    """The header of plain `nvidia-smi`: (driver version, newest CUDA the driver runs)."""
    driver, cuda = _DRIVER.search(text), _CUDA.search(text)
    return (driver.group(1) if driver else None), (cuda.group(1) if cuda else None)


def kernel_module_version(text: str) -> Optional[str]:
    """`/proc/driver/nvidia/version`: the loaded kernel module's version."""
    found = _NVRM.search(text)
    return found.group(1) if found else None


def rocm_smi_gpus(text: str) -> List[str]:
    """`rocm-smi --showproductname`: one card series per GPU index."""
    names = {}
    for line in text.splitlines():
        found = _ROCM_SMI.match(line)
        if found:
            names.setdefault(int(found.group(1)), found.group(2))
    return [names[index] for index in sorted(names)]


def rocminfo_gpus(text: str) -> List[str]:
    """`rocminfo`: the marketing names of the agents whose device type is GPU."""
    names = []
    for block in re.split(r"\n(?=\*{5,}|Agent \d+)", text):
        fields = dict(_field(line) for line in block.splitlines() if ":" in line)
        if fields.get("Device Type") == "GPU":
            names.append(fields.get("Marketing Name") or fields.get("Name") or "AMD GPU")
    return names


def _field(line: str) -> Tuple[str, str]:
    key, _, value = line.partition(":")
    return key.strip(), value.strip()


def first_version(text: Optional[str]) -> Optional[str]:
    found = re.match(r"\s*(\d+\.\d+(?:\.\d+)?)", text or "")
    return found.group(1) if found else None


def missing_library(error: str) -> Optional[str]:
    """The shared library named by a loader error, e.g. 'libcudnn.so.9'."""
    if "cannot open shared object" not in error and "DLL" not in error and "Library not loaded" not in error:
        return None
    found = _LIBRARY.search(error)
    return found.group(1) if found else None


def cudnn_version(number: Optional[int]) -> Optional[str]:
    """torch.backends.cudnn.version(): 8902 is 8.9.2, 90100 is 9.1.0."""
    if not isinstance(number, int) or number <= 0:
        return None
    if number >= 90000:
        return f"{number // 10000}.{number // 100 % 100}.{number % 100}"
    return f"{number // 1000}.{number // 100 % 10}.{number % 100}"


def trim(text: str, lines: int = 6, width: int = 160) -> List[str]:
    """The first lines of a command's output, each cut to a readable width."""
    kept = [line.rstrip()[:width] for line in text.strip().splitlines() if line.strip()]
    if len(kept) > lines:
        kept = kept[:lines] + [f"... ({len(kept) - lines} more lines)"]
    return kept
