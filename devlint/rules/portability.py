"""DEV3xx: code that needs an accelerator on machines that may not have one."""
from __future__ import annotations

from typing import Iterator

from ..analysis.facts import (
    ACCELERATOR_DEFAULT, AVAILABILITY_NOT_CALLED, LOAD_WITHOUT_MAP_LOCATION, UNGUARDED_CUDA_API, FileFacts,
)
from .base import WARNING, Finding, Rule
from .context import RuleContext


def _unguarded_roots(facts: FileFacts, beside_chosen: bool):
    """One fact per root; files that require CUDA anyway (an NCCL job) have no roots."""
    if facts.distributed.requires_accelerator:
        return
    seen = set()
    for fact in facts.unguarded:
        if id(fact.root) in seen:
            continue
        seen.add(id(fact.root))
        if (fact.bare_cuda and bool(fact.chosen_device)) == beside_chosen:
            yield fact


class UnguardedAccelerator(Rule):
    code = "DEV301"
    name = "unguarded-accelerator"
    severity = WARNING
    summary = "An accelerator is requested with no CPU fallback."
    why = """
`torch.device("cuda")`, `"cuda"` and `.cuda()` raise "Torch not compiled with CUDA
enabled" or "no CUDA GPUs are available" on every machine without a GPU: the
laptop, the CI runner, a colleague's Mac. The device is chosen once, at the top,
so that one line decides whether the whole program is portable. devlint reports
that line (the root), not every `.to(device)` that uses it.
"""
    example = """
device = torch.device("cuda")
model = Net().to(device)
"""
    use_instead = """
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Net().to(device)
"""
    invalid = ("""
import torch
from torch import nn
device = torch.device("cuda")  # expect: DEV301
model = nn.Linear(4, 2).to(device)
""",)
    valid = ("""
import torch
from torch import nn
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2).to(device)
""",)

    def check(self, facts: FileFacts, context: RuleContext) -> Iterator[Finding]:
        for fact in _unguarded_roots(facts, beside_chosen=False):
            used = "" if fact.use is fact.root else f" (used on line {context.line_of(fact.use)})"
            what = "`.cuda()`" if fact.bare_cuda else f"`{context.text_of(fact.root)}`"
            yield Finding(fact.root, (
                f"{what} asks for CUDA with no CPU fallback{used}; choose the device with "
                "torch.cuda.is_available() (or torch.accelerator)"))


class AvailabilityNotCalled(Rule):
    code = "DEV302"
    name = "availability-not-called"
    severity = WARNING
    summary = "`torch.cuda.is_available` is used without being called, so it is always true."
    why = """
A function object is truthy. `if torch.cuda.is_available:` takes the GPU branch on
every machine, and the program crashes where there is no GPU, exactly where the
check was meant to help.
"""
    example = """
device = "cuda" if torch.cuda.is_available else "cpu"
"""
    use_instead = """
device = "cuda" if torch.cuda.is_available() else "cpu"
"""
    invalid = ("""
import torch
device = "cuda" if torch.cuda.is_available else "cpu"  # expect: DEV302
x = torch.zeros(3, device=device)
""",)
    valid = ("""
import torch
device = "cuda" if torch.cuda.is_available() else "cpu"
x = torch.zeros(3, device=device)
""",)

    def check(self, facts: FileFacts, context: RuleContext) -> Iterator[Finding]:
        for fact in facts.misuses:
            if fact.kind == AVAILABILITY_NOT_CALLED:
                yield Finding(fact.node, f"`{fact.api}` is not called: the function object is always true; "
                                         f"use `{fact.api}()`")


class AcceleratorDefaultArgument(Rule):
    code = "DEV303"
    name = "accelerator-default-argument"
    severity = WARNING
    summary = "A command-line or config default of `\"cuda\"` with no fallback."
    why = """
A `--device` option that defaults to `"cuda"` makes every run without the flag
need a GPU: the quick test on a laptop, the CI smoke run, the README's example.
A default should work everywhere, and the user can still ask for a GPU.
"""
    example = """
parser.add_argument("--device", default="cuda")
"""
    use_instead = """
parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
"""
    invalid = ("""
import argparse
import torch
parser = argparse.ArgumentParser()
parser.add_argument("--device", default="cuda")  # expect: DEV303
args = parser.parse_args()
x = torch.zeros(3, device=args.device)
""",)
    valid = ("""
import argparse
import torch
parser = argparse.ArgumentParser()
parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
args = parser.parse_args()
x = torch.zeros(3, device=args.device)
""",)

    def check(self, facts: FileFacts, context: RuleContext) -> Iterator[Finding]:
        for fact in facts.misuses:
            if fact.kind == ACCELERATOR_DEFAULT:
                yield Finding(fact.node, (
                    f"the {fact.api} `{context.text_of(fact.node)}` needs a GPU whenever it is not overridden; "
                    "default to an available device"))


class LoadWithoutMapLocation(Rule):
    code = "DEV304"
    name = "load-without-map-location"
    severity = WARNING
    summary = "`torch.load` without `map_location` restores tensors to the device they were saved from."
    why = """
A checkpoint saved on a GPU remembers `cuda:0` in every tensor. `torch.load` without
`map_location` puts them back there: on a machine without a GPU it fails with
"Attempting to deserialize object on a CUDA device", and on a multi-GPU machine every
process loads onto GPU 0.
"""
    example = """
state = torch.load("model.pt")
"""
    use_instead = """
state = torch.load("model.pt", map_location="cpu")
"""
    invalid = ("""
import torch
state = torch.load("model.pt")  # expect: DEV304
""",)
    valid = ("""
import torch
state = torch.load("model.pt", map_location="cpu")
""",)

    def check(self, facts: FileFacts, context: RuleContext) -> Iterator[Finding]:
        for fact in facts.misuses:
            if fact.kind == LOAD_WITHOUT_MAP_LOCATION:
                yield Finding(fact.node, "torch.load without map_location restores tensors to the device they "
                                         "were saved on; pass map_location (\"cpu\" or the chosen device)")


class CudaBesideChosenDevice(Rule):
    code = "DEV305"
    name = "cuda-beside-chosen-device"
    severity = WARNING
    summary = "`.cuda()` is used where the code already chose a device."
    why = """
The code picked a device (with a CPU fallback, or from the user) and then a `.cuda()`
ignores that choice: the program works on the GPU box and crashes on the machines
the device variable was written for.
"""
    example = """
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Net().to(device)
x = x.cuda()
"""
    use_instead = """
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Net().to(device)
x = x.to(device)
"""
    invalid = ("""
import torch
from torch import nn
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2).to(device)
x = torch.randn(8, 4).cuda()  # expect: DEV305
""",)
    valid = ("""
import torch
from torch import nn
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2).to(device)
x = torch.randn(8, 4).to(device)
""",)

    def check(self, facts: FileFacts, context: RuleContext) -> Iterator[Finding]:
        for fact in _unguarded_roots(facts, beside_chosen=True):
            yield Finding(fact.root, (
                f"`.cuda()` ignores the chosen device `{fact.chosen_device}` and fails without a GPU; "
                f"use `.to({fact.chosen_device})`"))


class UnguardedCudaApi(Rule):
    code = "DEV306"
    name = "unguarded-cuda-api"
    severity = WARNING
    summary = "A CUDA-only function is called with no availability check."
    why = """
`torch.cuda.synchronize()`, `get_device_name()`, `set_device()`, `mem_get_info()`,
CUDA streams and events initialise CUDA and raise on a machine without it. Timing
and logging code is where they hide, so the crash comes from a line that was never
meant to matter. (`empty_cache`, `manual_seed`, `device_count` and the memory
statistics are safe without a GPU and are not reported.)
"""
    example = """
torch.cuda.synchronize()
print(torch.cuda.get_device_name(0))
"""
    use_instead = """
if torch.cuda.is_available():
    torch.cuda.synchronize()
    print(torch.cuda.get_device_name(0))
"""
    invalid = ("""
import torch
torch.cuda.synchronize()  # expect: DEV306
""",)
    valid = ("""
import torch
if torch.cuda.is_available():
    torch.cuda.synchronize()
torch.cuda.empty_cache()
""",)

    def check(self, facts: FileFacts, context: RuleContext) -> Iterator[Finding]:
        if facts.distributed.requires_accelerator:
            return
        for fact in facts.misuses:
            if fact.kind == UNGUARDED_CUDA_API:
                yield Finding(fact.node, f"`{fact.api}()` needs CUDA and raises without it; "
                                         "guard it with torch.cuda.is_available()")


PORTABILITY_RULES = (
    UnguardedAccelerator, AvailabilityNotCalled, AcceleratorDefaultArgument, LoadWithoutMapLocation,
    CudaBesideChosenDevice, UnguardedCudaApi,
)
