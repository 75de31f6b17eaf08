"""Recorded machines, replayed: each must produce the right first failing step, remedy
and exit status. The recordings are in tests/doctor_recordings/, in the format of
`devlint doctor --json`'s `observations`, so `devlint doctor --replay FILE` shows any of them."""
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from devlint.doctor import diagnose
from devlint.doctor.command import exit_status
from devlint.doctor.model import FAIL, OK, SKIPPED, WARN
from devlint.doctor.recording import replay
from devlint.doctor.render import as_json, as_text

RECORDINGS = Path(__file__).parent / "doctor_recordings"

# name: (first problem, its status, in its summary, in its remedy, usable, exit, exit with --require-accelerator)
SITUATIONS = {
    "no_driver": ("driver", FAIL, "no NVIDIA driver", "install the NVIDIA driver", False, 1, 1),
    "driver_too_old": ("driver", FAIL, "470.82.01 is too old for torch's CUDA 12.4 (needs >= 525.60.13)",
                       "update the NVIDIA driver to 525.60.13 or newer, or pip install --force-reinstall torch==2.5.1 --index-url https://download.pytorch.org/whl/cu118", False, 1, 1),
    "cpu_wheel_on_gpu": ("framework", FAIL, "torch 2.13.0+cpu is a CPU-only build, on a machine with NVIDIA GPUs",
                         "pip install --force-reinstall torch==2.13.0 --index-url https://download.pytorch.org/whl/cu126",
                         False, 1, 1),
    "cuda_visible_devices_empty": ("visibility", FAIL, "CUDA_VISIBLE_DEVICES is set but empty: it hides every GPU",
                                   "unset CUDA_VISIBLE_DEVICES", False, 1, 1),
    "cuda_visible_devices_absent_index": ("visibility", WARN, "'3' is not a device here", "0 to 1", True, 0, 0),
    "container_without_gpus": ("driver", FAIL, "container was started without GPU access", "docker run --gpus all",
                               False, 1, 1),
    "rocm_healthy": (None, None, "", "", True, 0, 0),
    "rocm_build_on_nvidia": ("framework", FAIL, "is a ROCm build (HIP 6.2", "--index-url https://download.pytorch.org/whl/cu124",
                             False, 1, 1),
    "healthy_multi_gpu": (None, None, "", "", True, 0, 0),
    "gpu_newer_than_build": ("framework", FAIL, "no kernels for NVIDIA GeForce RTX 5090 (sm_120)",
                             "CUDA 12.8 or newer", False, 1, 1),
    "driver_not_loaded": ("driver", FAIL, "nvidia-smi cannot talk to the NVIDIA driver", "kernel module is not loaded",
                          False, 1, 1),
    "driver_mismatch_after_upgrade": ("driver", FAIL, "nvidia-smi cannot talk to the NVIDIA driver", "reboot", False, 1, 1),
    "apple_silicon": (None, None, "", "", True, 0, 0),
    "apple_rosetta": ("hardware", FAIL, "running under Rosetta", "native arm64 Python", False, 1, 1),
    "wsl_without_gpu_support": ("hardware", WARN, "WSL without GPU access", "do not install a Linux NVIDIA driver",
                                False, 0, 1),
    "cpu_laptop": ("hardware", WARN, "no NVIDIA, AMD or Apple GPU", "PyTorch runs on the CPU here", False, 0, 1),
}


def load(name):
    return json.loads((RECORDINGS / f"{name}.json").read_text(encoding="utf-8"))


def test_every_recording_has_an_expectation():
    assert sorted(path.stem for path in RECORDINGS.glob("*.json")) == sorted(SITUATIONS)


@pytest.mark.parametrize("name", sorted(SITUATIONS))
def test_first_problem_remedy_and_exit_status(name):
    first_id, status, summary, remedy, usable, exit_plain, exit_required = SITUATIONS[name]
    diagnosis = diagnose(replay(load(name)))
    first = diagnosis.first_problem
    assert [check.id for check in diagnosis.checks] == ["hardware", "driver", "framework", "libraries", "visibility", "proof"]
    if first_id is None:
        assert first is None, first
        assert all(check.status in (OK, SKIPPED) for check in diagnosis.checks)
    else:
        assert (first.id, first.status) == (first_id, status), first
        assert summary in first.summary
        assert remedy in (first.remedy or "")
        before = diagnosis.checks[:diagnosis.checks.index(first)]
        assert all(check.status in (OK, SKIPPED, WARN if status == FAIL else OK) for check in before), before
    assert diagnosis.accelerator.usable is usable
    assert exit_status(diagnosis, require_accelerator=False) == exit_plain
    assert exit_status(diagnosis, require_accelerator=True) == exit_required


@pytest.mark.parametrize("name", sorted(SITUATIONS))
def test_the_checklist_highlights_the_first_problem(name):
    diagnosis = diagnose(replay(load(name)))
    text = as_text(diagnosis)
    marked = [line for line in text.splitlines() if line.startswith(">")]
    first = diagnosis.first_problem
    if first is None:
        assert marked == [] and "Accelerator usable:" in text
    else:
        assert len(marked) == 1 and first.title in marked[0] and first.summary in marked[0]
        if first.remedy and not diagnosis.accelerator.usable:
            assert f"Fix: {first.remedy}" in text


@pytest.mark.parametrize("name", sorted(SITUATIONS))
def test_a_report_replays_to_the_same_diagnosis(name):
    """`--json` carries its observations, so a user's report can be diagnosed again elsewhere."""
    first = diagnose(replay(load(name)))
    again = diagnose(replay(json.loads(as_json(first))))
    assert again.checks == first.checks and again.accelerator == first.accelerator


def test_healthy_box_proves_every_device():
    diagnosis = diagnose(replay(load("healthy_multi_gpu")))
    proof = diagnosis.checks[-1]
    assert proof.summary.startswith("computed on 8 of 8 devices")
    assert len(proof.evidence) == 8 and all(" ms" in line for line in proof.evidence)
    assert diagnosis.accelerator.kind == "cuda"
    assert diagnosis.accelerator.devices == tuple((f"cuda:{i}", "NVIDIA H100 80GB HBM3") for i in range(8))
    assert json.loads(as_json(diagnosis))["accelerator"]["devices"][7] == {"device": "cuda:7", "name": "NVIDIA H100 80GB HBM3"}


def test_rocm_box_is_reported_as_rocm():
    diagnosis = diagnose(replay(load("rocm_healthy")))
    assert diagnosis.accelerator.kind == "rocm"
    assert "ROCm" in diagnosis.checks[2].summary


def test_no_driver_names_nouveau_and_torch_reason():
    diagnosis = diagnose(replay(load("no_driver")))
    driver = diagnosis.checks[1]
    assert "nouveau" in driver.remedy
    framework = diagnosis.checks[2]
    assert any("Found no NVIDIA driver" in line for line in framework.evidence)
    assert diagnosis.checks[4].status == SKIPPED  # visibility: the driver check already said why


RECORDED_KEYS = ("device", "ok", "ms", "error", "index", "name", "capability", "arch", "memory_gib", "returncode",
                 "stdout", "stderr", "system", "release", "machine", "libcudart", "libamdhip64")
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(RECORDED_KEYS) | st.text(max_size=5),
                                                                 inner, max_size=4),
    max_leaves=12)
TORCH_KEYS = ("installed", "version", "cuda", "hip", "cuda_available", "device_count", "devices", "arch_list",
              "warnings", "init_error", "import_error", "probe_error", "cudnn", "mps_built", "mps_available",
              "proofs", "libraries", "bundled_cudart", "stage", "python")


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(base=st.sampled_from(sorted(SITUATIONS)), key=st.sampled_from(TORCH_KEYS), value=JSON_VALUES,
       section=st.sampled_from(("commands", "files", "dirs", "links", "env", "platform")), junk=JSON_VALUES)
def test_damaged_recordings_never_crash_the_doctor(base, key, value, section, junk):
    """A hand-edited or truncated recording still gets a diagnosis, not a traceback."""
    recording = load(base)
    recording["observations"]["torch"][key] = value
    table = recording["observations"].get(section)
    if isinstance(table, dict) and table:
        table[sorted(table)[0]] = junk
    diagnosis = diagnose(replay(recording))
    assert len(diagnosis.checks) == 6
    as_text(diagnosis, verbose=True)
    json.loads(as_json(diagnosis))


def test_a_driver_that_finds_no_gpu_is_not_called_unreachable():
    recording = load("healthy_multi_gpu")
    recording["observations"]["commands"]["nvidia-smi -L"] = {"returncode": 6, "stdout": "No devices were found\n",
                                                               "stderr": ""}
    driver = diagnose(replay(recording)).checks[1]
    assert (driver.status, driver.summary) == (FAIL, "the NVIDIA driver is loaded but finds no GPU")


def test_a_source_build_without_a_cuda_runtime_on_the_loader_path():
    recording = load("healthy_multi_gpu")
    torch = recording["observations"]["torch"]
    torch.update(bundled_cudart=[], libraries={}, loader_cudart=None, cuda_available=False, device_count=0,
                 devices=[], proofs=[])
    libraries = diagnose(replay(recording)).checks[3]
    assert (libraries.status, libraries.summary) == (FAIL, "torch relies on a system CUDA, and the loader finds no libcudart")
    torch["loader_cudart"] = "libcudart.so.12"
    libraries = diagnose(replay(recording)).checks[3]
    assert libraries.status == OK and "the loader finds libcudart.so.12" in libraries.evidence[1]


def test_nvidia_smi_without_an_nvidia_gpu_on_the_bus_is_no_failure():
    """nvidia-utils installed on a machine without an NVIDIA GPU: its complaint is not a driver fault."""
    recording = load("cpu_laptop")
    recording["observations"]["commands"]["nvidia-smi -L"] = {
        "returncode": 9, "stderr": "",
        "stdout": "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
                  "Make sure that the latest NVIDIA driver is installed and running.\n"}
    diagnosis = diagnose(replay(recording))
    assert diagnosis.checks[1].status == SKIPPED and not diagnosis.failed


def test_amd_graphics_seen_only_on_the_bus_is_a_warning():
    """A laptop's integrated Radeon with the default (CUDA) wheel: maybe ROCm could use it, likely not."""
    recording = load("cpu_laptop")
    files = recording["observations"]["files"]
    files["/sys/bus/pci/devices/0000:00:02.0/vendor"] = "0x1002\n"
    recording["observations"]["torch"].update(version="2.5.1+cu124", cuda="12.4")
    diagnosis = diagnose(replay(recording))
    framework = diagnosis.checks[2]
    assert (framework.status, framework.summary) == (WARN, "torch 2.5.1+cu124 is a CUDA build, on a machine with AMD graphics")
    assert framework.remedy.startswith("if it is a GPU that ROCm supports")
    assert not diagnosis.failed and exit_status(diagnosis, require_accelerator=False) == 0


def test_a_probe_that_dies_while_starting_the_gpu():
    recording = load("healthy_multi_gpu")
    torch = recording["observations"]["torch"]
    for key in ("cuda_available", "device_count", "devices", "arch_list", "proofs", "libraries", "warnings"):
        torch.pop(key)
    torch.update(stage="availability", probe_error="the PyTorch probe was killed by signal 11 during its last step.")
    diagnosis = diagnose(replay(recording))
    first = diagnosis.first_problem
    assert (first.id, first.status) == ("framework", FAIL)
    assert first.summary == "torch 2.5.1+cu124 crashed or hung while starting the GPU"
    assert "killed by signal 11" in first.evidence[-1] and "dmesg" in first.remedy
