"""Wording and remedies that several checks share."""
from __future__ import annotations

from collections import Counter
from typing import Iterable, Optional

from .. import tables
from ..facts import Facts

CONTAINER_REMEDY = {
    "NVIDIA": "start the container with the GPUs: `docker run --gpus all ...` (needs the NVIDIA Container "
              "Toolkit on the host); on Kubernetes, request `nvidia.com/gpu` in the pod's resources",
    "AMD": "start the container with the GPUs: `docker run --device=/dev/kfd --device=/dev/dri ...`",
}
WSL_REMEDY = ("install the current NVIDIA driver on the Windows side (it brings WSL 2 support) and do not "
              "install a Linux NVIDIA driver inside WSL")


def describe(names: Iterable[str]) -> str:
    """'NVIDIA H100 80GB HBM3 x2, NVIDIA A10' from a list of device names."""
    counts = Counter(names)
    return ", ".join(name if count == 1 else f"{name} x{count}" for name, count in counts.items())


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def driver_cuda(facts: Facts) -> Optional[str]:
    """The newest CUDA the NVIDIA driver runs: nvidia-smi's word, else the driver table's."""
    return facts.nvidia.driver_cuda or (tables.cuda_of_driver(facts.nvidia.driver) if facts.nvidia.driver else None)


def cuda_build_hint(facts: Facts) -> str:
    """How to get the CUDA build of the installed torch release that this driver runs."""
    index = wheel_index(facts)
    runs = driver_cuda(facts)
    if index is None:
        return (f"no CUDA build of torch {facts.torch.version} runs on driver {facts.nvidia.driver}: "
                f"update the NVIDIA driver, then see {tables.INSTALL_PAGE}")
    why = f" (the CUDA build that suits your driver {facts.nvidia.driver}, CUDA {runs})" if runs else \
        f" (or the build for your driver's CUDA version, see {tables.INSTALL_PAGE})"
    return tables.reinstall_hint(facts.torch.version, index) + why


def wheel_index(facts: Facts) -> Optional[str]:
    return tables.wheel_index_for_driver(facts.torch.version, facts.nvidia.driver, facts.host.system)


def rocm_build_hint(facts: Facts) -> str:
    return (tables.reinstall_hint(facts.torch.version, tables.wheel_index_for_rocm(facts.amd.rocm))
            + f" (pick the ROCm version of your system, see {tables.INSTALL_PAGE})")
