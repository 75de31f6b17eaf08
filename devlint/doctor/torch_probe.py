"""Asks an interpreter's PyTorch what it was built for and what it can use.

Run as `python -c <this file's text> OUT.json` by `probes.SubprocessTorch`, in the
interpreter being diagnosed, which may not have devlint: standard library only, and
syntax that Python 3.8 reads. The JSON is rewritten after every step, so a crash in CUDA
initialisation still leaves what was learnt before it, and `stage` names the step that
crashed."""
import json
import os
import platform
import sys
import time
import warnings

OUT = sys.argv[1]
SIDE = 256  # ones(SIDE, SIDE) @ ones(SIDE, SIDE) sums to SIDE ** 3, exact in float32
facts = {"python": sys.executable, "python_version": platform.python_version(), "installed": False}


def save(stage):
    facts["stage"] = stage
    with open(OUT, "w") as handle:
        json.dump(facts, handle, indent=1, sort_keys=True)


def message(error):
    return "%s: %s" % (type(error).__name__, str(error).strip())


def caught(records):
    texts = []
    for record in records:
        text = str(record.message).strip()
        if text not in texts:
            texts.append(text)
    return texts


def loaded_libraries():
    """Which CUDA/ROCm runtime files the process mapped, by library (Linux only)."""
    found = {}
    try:
        with open("/proc/self/maps") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return found
    for line in lines:
        path = line.split()[-1] if line.split() else ""
        name = os.path.basename(path)
        for library in ("libcudart", "libcudnn", "libcuda", "libamdhip64", "libnvidia-ml"):
            if name.startswith(library + ".so") or name.startswith(library + "-"):
                found.setdefault(library, path)
    return found


def bundled_cudart(torch_dir):
    """libcudart files shipped with torch: in torch/lib, or in the nvidia-* wheels beside it."""
    site = os.path.dirname(torch_dir)
    folders = [os.path.join(torch_dir, "lib"), os.path.join(site, "nvidia", "cuda_runtime", "lib"),
               os.path.join(site, "nvidia", "cu13", "lib")]
    files = []
    for folder in folders:
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        files.extend(os.path.join(folder, n) for n in names if n.startswith("libcudart") or n.startswith("cudart"))
    return files


def prove(torch, device):
    """Allocate, compute and copy back; the time includes the device's first use."""
    start = time.perf_counter()
    try:
        ones = torch.ones(SIDE, SIDE, device=device)
        total = (ones @ ones).sum().to("cpu").item()
        if device.startswith("cuda"):
            torch.cuda.synchronize(device)
        elapsed = (time.perf_counter() - start) * 1000.0
        if total != float(SIDE ** 3):
            return {"device": device, "ok": False, "ms": elapsed,
                    "error": "wrong result: %r instead of %r" % (total, float(SIDE ** 3))}
        return {"device": device, "ok": True, "ms": round(elapsed, 1), "error": None}
    except Exception as error:  # the proof reports every failure, whatever its type
        return {"device": device, "ok": False, "ms": None, "error": message(error)}


def main():
    save("import")
    try:
        import torch
    except Exception as error:  # a missing shared library raises OSError, not ImportError
        if not (isinstance(error, ImportError) and getattr(error, "name", None) == "torch"):
            facts["import_error"] = message(error)  # installed, but broken
        save("done")
        return
    facts.update(installed=True, version=str(torch.__version__), location=os.path.dirname(torch.__file__),
                 cuda=getattr(torch.version, "cuda", None), hip=getattr(torch.version, "hip", None))
    facts["bundled_cudart"] = bundled_cudart(facts["location"])
    if facts["cuda"] and not facts["bundled_cudart"]:  # a build against the system's CUDA
        import ctypes.util
        facts["loader_cudart"] = ctypes.util.find_library("cudart")
    save("availability")
    with warnings.catch_warnings(record=True) as records:
        warnings.simplefilter("always")
        facts["cuda_available"] = bool(torch.cuda.is_available())
        facts["device_count"] = int(torch.cuda.device_count()) if facts["cuda_available"] else 0
        if not facts["cuda_available"] and (facts["cuda"] or facts["hip"]):
            try:
                torch.cuda.init()
            except Exception as error:
                facts["init_error"] = message(error)
        facts["warnings"] = caught(records)
    save("devices")
    with warnings.catch_warnings(record=True) as records:
        warnings.simplefilter("always")
        devices = []
        for index in range(facts["device_count"]):
            try:
                props = torch.cuda.get_device_properties(index)
            except Exception as error:
                devices.append({"index": index, "name": None, "error": message(error)})
                continue
            devices.append({"index": index, "name": props.name, "capability": "%d.%d" % (props.major, props.minor),
                            "arch": getattr(props, "gcnArchName", None),
                            "memory_gib": round(props.total_memory / 2 ** 30, 1)})
        facts["devices"] = devices
        facts["arch_list"] = list(torch.cuda.get_arch_list()) if facts["cuda_available"] else []
        facts["warnings"] = facts["warnings"] + [w for w in caught(records) if w not in facts["warnings"]]
    cudnn = getattr(torch.backends, "cudnn", None)
    facts["cudnn_available"] = bool(cudnn is not None and cudnn.is_available())
    facts["cudnn"] = cudnn.version() if facts["cudnn_available"] else None
    mps = getattr(torch.backends, "mps", None)
    facts["mps_built"] = bool(mps is not None and mps.is_built())
    facts["mps_available"] = bool(mps is not None and mps.is_available())
    save("proofs")
    targets = ["cuda:%d" % d["index"] for d in devices] + (["mps"] if facts["mps_available"] else [])
    facts["proofs"] = []
    for target in targets:
        facts["proofs"].append(prove(torch, target))
        save("proofs")
    facts["libraries"] = loaded_libraries()
    save("done")


main()
