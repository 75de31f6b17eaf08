"""The doctor's readers of vendor tool output and its driver/wheel tables."""
import pytest

from devlint.doctor import tables, tool_output
from devlint.doctor.checks.framework import _runs
from devlint.doctor.checks.visibility import parse_visible
from devlint.doctor.tool_output import Gpu

SMI_LIST = """GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-5d0a2c41-93b1-4c3e-8a56-0b3c9a1f2e77)
  MIG 3g.40gb     Device  0: (UUID: MIG-1a2b3c4d-0000-5555-aaaa-bbbbccccdddd)
GPU 1: NVIDIA GeForce GTX 1080 (UUID: N/A)
"""


def test_nvidia_smi_list_reads_gpus_and_mig_slices():
    gpus, migs = tool_output.smi_gpus(SMI_LIST)
    assert gpus == [Gpu(0, "NVIDIA A100-SXM4-80GB", "GPU-5d0a2c41-93b1-4c3e-8a56-0b3c9a1f2e77"),
                    Gpu(1, "NVIDIA GeForce GTX 1080", None)]
    assert migs == ["MIG-1a2b3c4d-0000-5555-aaaa-bbbbccccdddd"]


@pytest.mark.parametrize("header, expected", [
    ("| NVIDIA-SMI 535.104.05             Driver Version: 535.104.05   CUDA Version: 12.2     |", ("535.104.05", "12.2")),
    ("| NVIDIA-SMI 580.65.06  Driver Version: 580.65.06  CUDA Version: 13.0 |", ("580.65.06", "13.0")),
    ("no table at all", (None, None)),
])
def test_nvidia_smi_header(header, expected):
    assert tool_output.smi_versions("+----+\n" + header + "\n") == expected


@pytest.mark.parametrize("text, expected", [
    ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.216.03  Thu Apr  3 2025\n", "535.216.03"),
    ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.195.03  Release Build\n", "570.195.03"),
    ("", None),
])
def test_kernel_module_version(text, expected):
    assert tool_output.kernel_module_version(text) == expected


def test_rocm_tools():
    smi = "GPU[0]\t\t: Card Series: \t\tAMD Instinct MI250X\nGPU[0]\t\t: Card Model: \t\t0x740c\n" \
          "GPU[1]\t\t: Card series: \t\tAMD Instinct MI250X\n"
    assert tool_output.rocm_smi_gpus(smi) == ["AMD Instinct MI250X", "AMD Instinct MI250X"]
    info = ("*******\nAgent 1\n*******\n  Name:   AMD EPYC 7763\n  Marketing Name: AMD EPYC 7763\n  Device Type: CPU\n"
            "*******\nAgent 2\n*******\n  Name:   gfx1100\n  Marketing Name: Radeon RX 7900 XTX\n  Device Type: GPU\n")
    assert tool_output.rocminfo_gpus(info) == ["Radeon RX 7900 XTX"]


@pytest.mark.parametrize("error, library", [
    ("OSError: libcudnn.so.9: cannot open shared object file: No such file or directory", "libcudnn.so.9"),
    ("ImportError: libcudart.so.12: cannot open shared object file", "libcudart.so.12"),
    ("ModuleNotFoundError: No module named 'torch'", None),
])
def test_missing_library(error, library):
    assert tool_output.missing_library(error) == library


@pytest.mark.parametrize("number, version", [(8902, "8.9.2"), (90100, "9.1.0"), (91002, "9.10.2"), (None, None)])
def test_cudnn_version(number, version):
    assert tool_output.cudnn_version(number) == version


@pytest.mark.parametrize("cuda, system, driver", [
    ("11.8", "Linux", "450.80.02"), ("12.4", "Linux", "525.60.13"), ("12.1", "Windows", "528.33"),
    ("13.0", "Linux", "580.65.06"), ("14.0", "Linux", None), ("garbage", "Linux", None),
])
def test_minimum_driver(cuda, system, driver):
    assert tables.minimum_driver(cuda, system) == driver


@pytest.mark.parametrize("driver, cuda", [
    ("470.82.01", "11.4"), ("525.60.13", "12.0"), ("550.54.15", "12.4"), ("570.133.20", "12.8"), ("400.1", None),
])
def test_cuda_a_driver_runs(driver, cuda):
    assert tables.cuda_of_driver(driver) == cuda


@pytest.mark.parametrize("torch_version, driver, index", [
    ("2.5.1+cpu", "550.54.15", "cu124"), ("2.5.1+cpu", "535.54.03", "cu124"), ("2.7.0", "575.51.03", "cu128"),
    ("2.13.0+cpu", "570.133.20", "cu126"), ("2.13.0+cpu", "590.10", "cu130"), ("2.13.0+cpu", None, "cu130"),
    ("2.13.0+cpu", "550.54.15", "cu126"),  # 12.6 runs on a 12.4 driver by minor-version compatibility
    ("2.5.1", "470.82.01", "cu118"), ("2.13.0", "470.82.01", None), ("2.5.1", "440.33", None),
    ("2.14.0.dev20261101+cpu", "560.28.03", "cu126"),
])
def test_wheel_index_matches_driver_and_release(torch_version, driver, index):
    found = tables.wheel_index_for_driver(torch_version, driver)
    assert (found.rsplit("/", 1)[-1] if found else None) == index


def test_windows_drivers_have_their_own_minimum():
    assert tables.wheel_index_for_driver("2.5.1", "527.50", "Linux").endswith("cu124")
    assert tables.wheel_index_for_driver("2.5.1", "527.50", "Windows").endswith("cu118")


def test_reinstall_hint_pins_the_release_without_its_local_label():
    hint = tables.reinstall_hint("2.13.0+cpu", tables.WHEEL_INDEX + "cu126")
    assert hint == "pip install --force-reinstall torch==2.13.0 --index-url https://download.pytorch.org/whl/cu126"


@pytest.mark.parametrize("capability, arch_list, runs", [
    ((9, 0), ["sm_80", "sm_90"], True), ((8, 9), ["sm_80", "sm_86"], True), ((12, 0), ["sm_80", "sm_90"], False),
    ((12, 0), ["sm_90", "compute_90"], True), ((9, 0), ["sm_90a"], True), ((8, 0), ["sm_90a"], False),
    ((7, 0), ["sm_75", "sm_80"], False),
])
def test_arch_list_covers_a_capability(capability, arch_list, runs):
    assert _runs(capability, arch_list) is runs


GPUS = [Gpu(0, "A", "GPU-aaaa1111"), Gpu(1, "B", "GPU-bbbb2222")]


@pytest.mark.parametrize("value, visible, stopped", [
    ("", [], ""), ("-1", [], "-1"), ("0,1", ["0", "1"], None), ("1", ["1"], None),
    ("0,3,1", ["0"], "3"), ("GPU-bbbb", ["GPU-bbbb"], None), ("GPU-cccc", [], "GPU-cccc"),
    ("0,0", [], "0"), (" 1 , 0", ["1", "0"], None),
])
def test_cuda_visible_devices(value, visible, stopped):
    assert parse_visible(value, GPUS, []) == (visible, stopped)


def test_cuda_visible_devices_unknown_gpus_are_taken_on_trust():
    assert parse_visible("5,GPU-x", [], []) == (["5", "GPU-x"], None)
