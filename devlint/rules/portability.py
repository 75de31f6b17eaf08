"""DEV3xx: code that needs an accelerator on machines that may not have one."""
from __future__ import annotations

from functools import partial
from typing import Iterator, Optional

import libcst as cst

from ..analysis.facts import (
    ACCELERATOR_DEFAULT, AVAILABILITY_NOT_CALLED, LOAD_WITHOUT_MAP_LOCATION, UNGUARDED_CUDA_API, ApiMisuse,
    FileFacts,
)
from ..analysis.facts import UnguardedAccelerator as UnguardedRequest
from ..analysis.names import dotted_name
from ..fixes import SAFE, UNSAFE, Fix
from ..fixes.recipes import guarded_cuda_method, guarded_device_call, guarded_string, takes_keyword
from .base import WARNING, Finding, Rule
from .context import RuleContext

_GUARDED = "Fall back to the CPU when no GPU is available"


def _guarded_fix(root: cst.CSTNode, context: RuleContext) -> Optional[Fix]:
    """The accelerator request, with a CPU fallback. Unsafe: on a machine without a GPU the
    program now runs on the CPU instead of stopping."""
    if isinstance(root, cst.SimpleString):
        text, extra = guarded_string(context, root)
        return Fix(UNSAFE, _GUARDED, (context.edits.replace(root, text), *extra))
    if not isinstance(root, cst.Call) or not isinstance(root.func, (cst.Name, cst.Attribute)):
        return None
    name = dotted_name(root.func) or ""
    if name.split(".")[-1] == "device":
        guarded = guarded_device_call(context, root)
        return None if guarded is None else Fix(UNSAFE, _GUARDED, (context.edits.replace(root, guarded[0]), *guarded[1]))
    if isinstance(root.func, cst.Attribute) and root.func.attr.value == "cuda":
        guarded = guarded_cuda_method(context, root)
        if guarded is None:
            return None
        return Fix(UNSAFE, _GUARDED, (context.edits.replace_span(root.func.attr, root, guarded[0]), *guarded[1]))
    literal = _cuda_literal_argument(root)
    return None if literal is None else _guarded_fix(literal, context)


def _cuda_literal_argument(call: cst.Call) -> Optional[cst.SimpleString]:
    """The `"cuda"` of `torch.zeros(3, device="cuda")` or `x.to("cuda")`."""
    for position, arg in enumerate(call.args):
        named_device = arg.keyword is not None and arg.keyword.value == "device"
        first_of_to = (arg.keyword is None and position == 0 and isinstance(call.func, cst.Attribute)
                       and call.func.attr.value == "to")
        value = arg.value
        if (named_device or first_of_to) and isinstance(value, cst.SimpleString) and str(
                value.evaluated_value).startswith("cuda"):
            return value
    return None


def _device_name_usable(name: str, at: cst.CSTNode, context: RuleContext) -> bool:
    """A chosen device's name that a fix can write at `at`: a dotted name bound there."""
    parts = name.split(".")
    return (bool(name) and all(part.isidentifier() for part in parts) and parts[0] != "self"
            and context.edits.name_bound_before(parts[0], at))


def _needs_cuda_anyway(facts: FileFacts) -> bool:
    """The program needs CUDA by nature: it starts an NCCL process group (here or through a
    project helper), it is built on a CUDA-only library, or its project's process setup refuses to
    run without CUDA."""
    return (facts.distributed.requires_accelerator or facts.requirements.cuda_by_nature is not None
            or facts.requirements.setup_needs_cuda)


def _unguarded_roots(facts: FileFacts, beside_chosen: bool):
    """One fact per root; files that require CUDA anyway (an NCCL job, FP8 kernels) have no roots."""
    if _needs_cuda_anyway(facts):
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
    fixable = True
    fix_summary = 'adds a CPU fallback, `"cuda" if torch.cuda.is_available() else "cpu"` or, with `fallback-style = "accelerator"`, `torch.accelerator.current_accelerator(check_available=True) or torch.device("cpu")` (unsafe: without a GPU the program now runs on the CPU instead of stopping)'
    name = "unguarded-accelerator"
    severity = WARNING
    summary = "An accelerator is requested with no CPU fallback."
    why = """
`torch.device("cuda")`, `"cuda"` and `.cuda()` raise "Torch not compiled with CUDA
enabled" or "no CUDA GPUs are available" on every machine without a GPU: the
laptop, the CI runner, a colleague's Mac. The device is chosen once, at the top,
so that one line decides whether the whole program is portable. devlint reports
that line (the root), not every `.to(device)` that uses it.

A call that leaves a `device="cuda"` default to itself asks for CUDA as well, and is
reported at the default. Code that runs only where a GPU is stays silent: a test
skipped without one, a branch that runs only on CUDA, and a file that imports a
GPU-only package (triton, vllm, flash_attn, ...) outside a `try`.
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
            same_line = fact.use is fact.root or context.line_of(fact.use) == context.line_of(fact.root)
            used = "" if same_line else f" (used on line {context.line_of(fact.use)})"
            what = "`.cuda()`" if fact.bare_cuda else f"`{context.text_of(fact.root)}`"
            yield Finding(fact.root, (
                f"{what} asks for CUDA with no CPU fallback{used}; choose the device with "
                "torch.cuda.is_available() (or torch.accelerator)"), partial(_guarded_fix, fact.root, context))


class AvailabilityNotCalled(Rule):
    code = "DEV302"
    fixable = True
    fix_summary = 'calls it: `torch.cuda.is_available()` (safe: where the GPU exists the check was true either way)'
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
                                         f"use `{fact.api}()`",
                              partial(_call_fix, fact, context))


def _call_fix(fact: ApiMisuse, context: RuleContext) -> Fix:
    """Safe: where the accelerator exists the check was true either way."""
    return Fix(SAFE, f"Call `{fact.api}()`", (context.edits.insert_after(fact.node, "()"),))


class AcceleratorDefaultArgument(Rule):
    code = "DEV303"
    fixable = True
    fix_summary = 'gives the default a CPU fallback, as for DEV301 (unsafe)'
    name = "accelerator-default-argument"
    severity = WARNING
    summary = "A command-line, config or keyword default of `\"cuda\"` with no fallback."
    why = """
A `--device` option that defaults to `"cuda"` makes every run without the flag
need a GPU: the quick test on a laptop, the CI smoke run, the README's example.
A default should work everywhere, and the user can still ask for a GPU. The same
holds for a function's `device="cuda"` keyword default in code that otherwise runs
without a GPU: every caller that leaves it out needs one. A switch that turns CUDA
off (`--no-cuda`, `--cpu`) or one that is on unless given (`--cuda` with
`action="store_false"`) does the same in a file that never asks whether CUDA is
available: `use_cuda = not args.no_cuda` chooses the GPU on every plain run.
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
""", """
import torch
def one_hot(labels, classes, device="cuda"):  # expect: DEV303
    return torch.zeros(len(labels), classes, device=device)
default_device = "cuda" if torch.cuda.is_available() else "cpu"
""")
    valid = ("""
import argparse
import torch
parser = argparse.ArgumentParser()
parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
args = parser.parse_args()
x = torch.zeros(3, device=args.device)
""",)

    def check(self, facts: FileFacts, context: RuleContext) -> Iterator[Finding]:
        # (a keyword default a call kept is a DEV301 root, reported there; in a program that needs
        # CUDA anyway, a default asking for it is no portability bug)
        roots = {id(fact.root) for fact in facts.unguarded}
        for fact in facts.misuses:
            if fact.kind == ACCELERATOR_DEFAULT and fact.api == "keyword default" and (
                    id(fact.node) in roots or _needs_cuda_anyway(facts)):
                continue
            if fact.kind == ACCELERATOR_DEFAULT and fact.api == "argparse switch":
                flag = context.text_of(fact.node.args[0].value) if fact.node.args else "switch"
                yield Finding(fact.node, (
                    f"the argparse switch {flag} leaves CUDA on unless it is given, and this file never asks "
                    "whether CUDA is available; combine it with `torch.cuda.is_available()`"))
            elif fact.kind == ACCELERATOR_DEFAULT:
                yield Finding(fact.node, (
                    f"the {fact.api} `{context.text_of(fact.node)}` needs a GPU whenever it is not overridden; "
                    "default to an available device"), partial(_guarded_fix, fact.node, context))


class LoadWithoutMapLocation(Rule):
    code = "DEV304"
    fixable = True
    fix_summary = 'adds `map_location=` the device chosen in scope, else `"cpu"` (safe when the result goes straight into `load_state_dict`, unsafe otherwise)'
    name = "load-without-map-location"
    severity = WARNING
    summary = "`torch.load` without `map_location` restores tensors to the device they were saved from."
    why = """
A checkpoint saved on a GPU remembers `cuda:0` in every tensor. `torch.load` without
`map_location` puts them back there: on a machine without a GPU it fails with
"Attempting to deserialize object on a CUDA device", and on a multi-GPU machine every
process loads onto GPU 0.

It is reported where what is loaded is device state: restored into a module or an
optimizer (`load_state_dict`), used or placed as a model, made the weights of a layer,
or read from a path or by a function named like a checkpoint. Files a program saved
for itself (scheduler numbers, caches, vocabularies) hold no device tensors.
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
            if fact.kind == LOAD_WITHOUT_MAP_LOCATION and id(fact.node) not in facts.requirements.own_checkpoints \
                    and id(fact.node) in facts.requirements.device_state_loads:
                yield Finding(fact.node, "torch.load without map_location restores tensors to the device they "
                                         "were saved on; pass map_location (\"cpu\" or the chosen device)",
                              partial(_map_location_fix, fact, context))


def _map_location_fix(fact: ApiMisuse, context: RuleContext) -> Optional[Fix]:
    """`map_location=` the device chosen in scope, else `"cpu"`. Safe only when the result goes
    straight into `load_state_dict`, which copies onto the parameters' own device anyway."""
    call = fact.node
    if not isinstance(call, cst.Call) or not takes_keyword(call, "map_location") or len(
            [arg for arg in call.args if arg.keyword is None]) > 1:
        return None
    device = fact.device if _device_name_usable(fact.device, call, context) else '"cpu"'
    argument, consumer = context.edits.parent(call), None
    if isinstance(argument, cst.Arg):
        consumer = context.edits.parent(argument)
    into_state_dict = (isinstance(consumer, cst.Call) and isinstance(consumer.func, cst.Attribute)
                       and consumer.func.attr.value == "load_state_dict")
    return Fix(SAFE if into_state_dict else UNSAFE, f"Load onto {device}",
               (context.edits.add_keyword(call, "map_location", device),))


class CudaBesideChosenDevice(Rule):
    code = "DEV305"
    fixable = True
    fix_summary = '`.to(device)` with the chosen device, keeping `non_blocking=` (safe)'
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
                f"use `.to({fact.chosen_device})`"), partial(_chosen_device_fix, fact, context))


def _chosen_device_fix(fact: UnguardedRequest, context: RuleContext) -> Optional[Fix]:
    """`x.cuda()` -> `x.to(device)`, keeping `non_blocking=`; safe where a GPU exists, since the
    chosen device is that GPU there."""
    call = fact.root
    if (not isinstance(call, cst.Call) or not isinstance(call.func, cst.Attribute) or call.func.attr.value != "cuda"
            or any(arg.keyword is None for arg in call.args)
            or not _device_name_usable(fact.chosen_device, call, context)):
        return None
    keywords = "".join(f", {arg.keyword.value}={context.module.code_for_node(arg.value)}" for arg in call.args)
    return Fix(SAFE, f"Use `.to({fact.chosen_device})`",
               (context.edits.replace_span(call.func.attr, call, f"to({fact.chosen_device}{keywords})"),))


class UnguardedCudaApi(Rule):
    code = "DEV306"
    name = "unguarded-cuda-api"
    severity = WARNING
    summary = "A CUDA-only function is called with no availability check."
    why = """
`torch.cuda.synchronize()`, `get_device_name()`, `set_device()`, `mem_get_info()`,
CUDA streams and events, and `Tensor.pin_memory()` initialise CUDA and raise on a
machine without it. Timing
and logging code is where they hide, so the crash comes from a line that was never
meant to matter. (`empty_cache`, `manual_seed`, `device_count` and the memory
statistics are safe without a GPU and are not reported.)

Reported in code that means to run without CUDA too: a function (or a caller of
it) that checks availability, names the CPU, places things on a device it was
given or chose, or joins a gloo process group. A helper with no such path (a
GPU capability query, a TensorRT build) and a file with none at all (CUDA
kernels, NCCL plumbing, a vLLM server) are CUDA code by nature, and their CUDA
calls are not portability bugs. (A helper named for CUDA is CUDA code only while
no caller that runs on the CPU too reaches it; pinning inside a batch class's own
`pin_memory()`, or under the program's own pin option, is what was asked for.)
"""
    example = """
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.cuda.synchronize()
print(torch.cuda.get_device_name(0))
"""
    use_instead = """
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
if device.type == "cuda":
    torch.cuda.synchronize()
    print(torch.cuda.get_device_name(0))
"""
    invalid = ("""
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.cuda.synchronize()  # expect: DEV306
""",)
    valid = ("""
import torch
if torch.cuda.is_available():
    torch.cuda.synchronize()
torch.cuda.empty_cache()
""", """
import torch
def all_gather_fused(chunks, stream):
    with torch.cuda.stream(stream):
        torch.cuda.synchronize()
""")

    def check(self, facts: FileFacts, context: RuleContext) -> Iterator[Finding]:
        if _needs_cuda_anyway(facts) or not facts.requirements.runs_without_cuda:
            return  # (code with no way to run without CUDA is CUDA code: kernels, NCCL, inference servers)
        for fact in facts.misuses:
            if fact.kind == UNGUARDED_CUDA_API and id(fact.node) not in facts.requirements.cuda_only_code \
                    and id(fact.node) in facts.requirements.cpu_capable_calls:
                yield Finding(fact.node, f"`{fact.api}()` needs CUDA and raises without it; "
                                         "guard it with torch.cuda.is_available()")


PORTABILITY_RULES = (
    UnguardedAccelerator, AvailabilityNotCalled, AcceleratorDefaultArgument, LoadWithoutMapLocation,
    CudaBesideChosenDevice, UnguardedCudaApi,
)
