"""Everything the checks need, gathered once through the probes. Checks read these facts
and never probe the machine themselves."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional

from . import tool_output
from .probes import NOT_FOUND, CommandResult, Probes
from .tool_output import Gpu
from .torch_facts import TorchFacts

PCI_ROOT = "/sys/bus/pci/devices"
NVIDIA_VENDOR, AMD_VENDOR = "0x10de", "0x1002"
#: PCI classes of display controllers (VGA, 3D, other) and processing accelerators.
GPU_CLASSES = ("0x0300", "0x0302", "0x0380", "0x1200")
WSL_SMI = "/usr/lib/wsl/lib/nvidia-smi"
VISIBILITY_VARIABLES = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
                        "NVIDIA_VISIBLE_DEVICES")


@dataclass(frozen=True)
class PciGpu:
    slot: str
    vendor: str  # "NVIDIA" or "AMD"
    device_id: str
    driver: Optional[str]  # the kernel driver bound to it: nvidia, nouveau, amdgpu, vfio-pci


@dataclass
class NvidiaFacts:
    listing: CommandResult = NOT_FOUND  # nvidia-smi -L
    gpus: List[Gpu] = field(default_factory=list)
    mig_uuids: List[str] = field(default_factory=list)
    driver: Optional[str] = None
    driver_cuda: Optional[str] = None  # the newest CUDA the driver runs, from nvidia-smi
    kernel_module: Optional[str] = None  # from /proc/driver/nvidia/version
    device_nodes: List[str] = field(default_factory=list)  # /dev/nvidia*


@dataclass
class AmdFacts:
    listing: CommandResult = NOT_FOUND  # rocm-smi or rocminfo
    gpus: List[str] = field(default_factory=list)
    kfd: bool = False  # /dev/kfd: the ROCm compute interface
    rocm: Optional[str] = None  # /opt/rocm/.info/version


@dataclass
class HostFacts:
    system: str
    release: str
    machine: str
    container: Optional[str] = None  # why we think so: "/.dockerenv", "cgroup: kubepods", ...
    wsl: bool = False
    wsl_gpu: bool = False  # /dev/dxg: WSL's GPU paravirtualisation
    rosetta: bool = False  # an x86-64 Python translated on Apple silicon


@dataclass
class Facts:
    host: HostFacts
    nvidia: NvidiaFacts
    amd: AmdFacts
    pci: Optional[List[PciGpu]]  # None when there is no PCI listing to read
    pci_devices: int
    env: Dict[str, Optional[str]]
    torch: TorchFacts

    @property
    def nvidia_hardware(self) -> bool:
        numbered_nodes = [name for name in self.nvidia.device_nodes if name[len("nvidia"):].isdigit()]
        return bool(self.nvidia.gpus or numbered_nodes or self.pci_gpus("NVIDIA"))

    def pci_gpus(self, vendor: str) -> List[PciGpu]:
        return [gpu for gpu in self.pci or [] if gpu.vendor == vendor]

    @property
    def amd_hardware(self) -> bool:
        """AMD GPUs the ROCm tools list; failing that, AMD graphics on the PCI bus unless an
        NVIDIA GPU is there too (then the AMD one is most likely the CPU's integrated GPU)."""
        return bool(self.amd.gpus or (self.pci_gpus("AMD") and not self.nvidia_hardware))

    @property
    def apple(self) -> bool:
        return self.host.system == "Darwin"


def gather(probes: Probes) -> Facts:
    platform = probes.environment.platform()
    env = {name: probes.environment.get(name) for name in VISIBILITY_VARIABLES + ("WSL_DISTRO_NAME",)}
    host = _host(probes, platform, env)
    pci, pci_devices = _pci(probes)
    return Facts(host=host, nvidia=_nvidia(probes, host), amd=_amd(probes), pci=pci, pci_devices=pci_devices,
                 env=env, torch=TorchFacts.of(probes.torch.snapshot()))


def _host(probes: Probes, platform: Dict[str, str], env: Dict[str, Optional[str]]) -> HostFacts:
    host = HostFacts(platform.get("system", ""), platform.get("release", ""), platform.get("machine", ""))
    if host.system == "Linux":
        host.container = _container(probes)
        kernel = (probes.files.read_text("/proc/version") or host.release).lower()
        host.wsl = "microsoft" in kernel or bool(env.get("WSL_DISTRO_NAME"))
        host.wsl_gpu = host.wsl and "dxg" in (probes.files.listdir("/dev") or [])
    if host.system == "Darwin":
        host.rosetta = probes.commands.run(["sysctl", "-n", "sysctl.proc_translated"]).stdout.strip() == "1"
    return host


def _container(probes: Probes) -> Optional[str]:
    for marker in ("/.dockerenv", "/run/.containerenv"):
        if probes.files.read_text(marker) is not None:
            return marker
    if probes.environment.get("KUBERNETES_SERVICE_HOST"):
        return "KUBERNETES_SERVICE_HOST is set"
    cgroup = probes.files.read_text("/proc/1/cgroup") or ""
    for word in ("docker", "kubepods", "containerd", "libpod", "lxc"):
        if word in cgroup:
            return f"/proc/1/cgroup mentions {word}"
    return None


def _pci(probes: Probes):
    slots = probes.files.listdir(PCI_ROOT)
    if not slots:
        return None, 0
    gpus = []
    for slot in slots:
        folder = f"{PCI_ROOT}/{slot}"
        device_class = (probes.files.read_text(f"{folder}/class") or "").strip()
        if not device_class.startswith(GPU_CLASSES):
            continue
        vendor = (probes.files.read_text(f"{folder}/vendor") or "").strip()
        name = {NVIDIA_VENDOR: "NVIDIA", AMD_VENDOR: "AMD"}.get(vendor)
        if name is None:
            continue
        device_id = (probes.files.read_text(f"{folder}/device") or "").strip().replace("0x", "")
        driver = probes.files.link_target(f"{folder}/driver")
        gpus.append(PciGpu(slot, name, device_id, driver.rstrip("/").rsplit("/", 1)[-1] if driver else None))
    return gpus, len(slots)


def _nvidia(probes: Probes, host: HostFacts) -> NvidiaFacts:
    facts = NvidiaFacts()
    smi = "nvidia-smi"
    facts.listing = probes.commands.run([smi, "-L"])
    if host.wsl and not facts.listing.succeeded:  # WSL keeps the working one outside PATH
        wsl_listing = probes.commands.run([WSL_SMI, "-L"])
        if wsl_listing.found:
            smi, facts.listing = WSL_SMI, wsl_listing
    if facts.listing.succeeded:
        facts.gpus, facts.mig_uuids = tool_output.smi_gpus(facts.listing.stdout)
        header = probes.commands.run([smi]).stdout  # plain nvidia-smi: its table's header has the versions
        facts.driver, facts.driver_cuda = tool_output.smi_versions(header)
    facts.kernel_module = tool_output.kernel_module_version(probes.files.read_text("/proc/driver/nvidia/version") or "")
    facts.driver = facts.driver or facts.kernel_module
    facts.device_nodes = [name for name in probes.files.listdir("/dev") or [] if name.startswith("nvidia")]
    return facts


def _amd(probes: Probes) -> AmdFacts:
    facts = AmdFacts()
    facts.listing = probes.commands.run(["rocm-smi", "--showproductname"])
    facts.gpus = tool_output.rocm_smi_gpus(facts.listing.stdout) if facts.listing.succeeded else []
    if not facts.gpus:
        rocminfo = probes.commands.run(["rocminfo"])
        if rocminfo.succeeded:
            facts.listing, facts.gpus = rocminfo, tool_output.rocminfo_gpus(rocminfo.stdout)
    facts.kfd = "kfd" in (probes.files.listdir("/dev") or [])
    facts.rocm = tool_output.first_version(probes.files.read_text("/opt/rocm/.info/version"))
    return facts
