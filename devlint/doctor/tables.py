"""What NVIDIA and PyTorch document, as data: which driver a CUDA version needs, which
CUDA a driver runs, and which PyTorch wheel index serves which CUDA or ROCm version."""
from __future__ import annotations

from typing import Optional, Tuple

Version = Tuple[int, ...]

#: Minimum driver for each CUDA major under minor-version compatibility (NVIDIA's CUDA
#: compatibility guide): a build for any 12.x runs on a driver of at least 525.60.13.
MINIMUM_DRIVER = {
    # major: (Linux, Windows); NVIDIA gives no Windows minimum for 13.x, so Linux's stands
    11: ("450.80.02", "452.39"),
    12: ("525.60.13", "528.33"),
    13: ("580.65.06", "580.65.06"),
}

#: The driver each toolkit release shipped with (Linux), i.e. the newest CUDA a driver
#: supports in full. Used when `nvidia-smi` does not print "CUDA Version".
TOOLKIT_DRIVER = (
    ("11.0", "450.36.06"), ("11.1", "455.23"), ("11.2", "460.27.03"), ("11.3", "465.19.01"),
    ("11.4", "470.42.01"), ("11.5", "495.29.05"), ("11.6", "510.39.01"), ("11.7", "515.43.04"),
    ("11.8", "520.61.05"), ("12.0", "525.60.13"), ("12.1", "530.30.02"), ("12.2", "535.54.03"),
    ("12.3", "545.23.06"), ("12.4", "550.54.14"), ("12.5", "555.42.02"), ("12.6", "560.28.03"),
    ("12.8", "570.26"), ("12.9", "575.51.03"), ("13.0", "580.65.06"),
)

#: The CUDA wheel indexes (download.pytorch.org/whl/cuXYZ) of each PyTorch release, from
#: its release compatibility matrix; releases after the last row are taken to match it.
WHEELS_BY_RELEASE = (
    ((2, 1), ("11.8", "12.1")), ((2, 2), ("11.8", "12.1")), ((2, 3), ("11.8", "12.1")),
    ((2, 4), ("11.8", "12.1", "12.4")), ((2, 5), ("11.8", "12.1", "12.4")),
    ((2, 6), ("11.8", "12.4", "12.6")), ((2, 7), ("11.8", "12.6", "12.8")),
    ((2, 8), ("12.6", "12.8", "12.9")), ((2, 9), ("12.6", "12.8", "13.0")),
    ((2, 10), ("12.6", "12.8", "13.0")), ((2, 11), ("12.6", "12.8", "13.0")),
    ((2, 12), ("12.6", "13.0")),
)
WHEEL_INDEX = "https://download.pytorch.org/whl/"
INSTALL_PAGE = "https://pytorch.org/get-started/locally/"


#: The first CUDA release that compiles for a compute capability: a build for an older
#: CUDA has no kernels for that GPU.
FIRST_CUDA_FOR_CAPABILITY = (
    ((8, 0), "11.0"), ((8, 6), "11.1"), ((8, 9), "11.8"), ((9, 0), "11.8"), ((10, 0), "12.8"), ((12, 0), "12.8"),
)


def first_cuda_for(capability: Version) -> Optional[str]:
    """The oldest CUDA that can build kernels for this capability (None when any can)."""
    needed = [cuda for known, cuda in FIRST_CUDA_FOR_CAPABILITY if known <= capability[:2]]
    return needed[-1] if needed else None


def wheel_index_at_least(cuda: str) -> str:
    """The oldest published CUDA wheel index at or above `cuda`, from any release."""
    wanted = parse_version(cuda) or (0,)
    published = sorted({c for _, cudas in WHEELS_BY_RELEASE for c in cudas}, key=parse_version)
    chosen = next((c for c in published if parse_version(c) >= wanted), published[-1])
    return WHEEL_INDEX + "cu" + chosen.replace(".", "")


def parse_version(text: Optional[str]) -> Optional[Version]:
    """'535.104.05' -> (535, 104, 5); None for anything else."""
    if not text:
        return None
    parts = text.strip().split(".")
    if not all(part.isdigit() for part in parts):
        return None
    return tuple(int(part) for part in parts)


def minimum_driver(cuda: str, system: str) -> Optional[str]:
    version = parse_version(cuda)
    if version is None or version[0] not in MINIMUM_DRIVER:
        return None
    linux, windows = MINIMUM_DRIVER[version[0]]
    return windows if system == "Windows" else linux


def cuda_of_driver(driver: str) -> Optional[str]:
    """The newest CUDA whose toolkit driver is not newer than `driver`."""
    found = parse_version(driver)
    if found is None:
        return None
    supported = [cuda for cuda, needs in TOOLKIT_DRIVER if parse_version(needs) <= found]
    return supported[-1] if supported else None


def release_wheels(torch_version: Optional[str]) -> Tuple[str, ...]:
    """The CUDA versions a torch release has wheels for (the newest known row by default)."""
    release = parse_version((torch_version or "").split("+")[0].split("a")[0].split("rc")[0])
    rows = [cudas for known, cudas in WHEELS_BY_RELEASE if release is None or known <= release[:2]]
    return (rows or [WHEELS_BY_RELEASE[0][1]])[-1]


def wheel_index_for_driver(torch_version: Optional[str], driver: Optional[str], system: str = "Linux") -> Optional[str]:
    """The newest CUDA wheel index of this torch release that `driver` runs (by minor-version
    compatibility, a 12.x build needs only the 12.x minimum); None when it runs none."""
    wheels = release_wheels(torch_version)
    found = parse_version(driver)
    if found is None:
        return WHEEL_INDEX + "cu" + wheels[-1].replace(".", "")
    runs = [c for c in wheels if (parse_version(minimum_driver(c, system)) or (999,)) <= found]
    return WHEEL_INDEX + "cu" + runs[-1].replace(".", "") if runs else None


def wheel_index_for_rocm(rocm: Optional[str]) -> str:
    version = parse_version((rocm or "").split("-")[0])
    if version is None or len(version) < 2:
        return WHEEL_INDEX + "rocm6.4"
    return f"{WHEEL_INDEX}rocm{version[0]}.{version[1]}"


def reinstall_hint(torch_version: Optional[str], index: str) -> str:
    pin = f"torch=={torch_version.split('+')[0]}" if torch_version else "torch"
    return f"pip install --force-reinstall {pin} --index-url {index}"
