"""DEV2xx: DataParallel, DistributedDataParallel and optimizer ordering."""
from __future__ import annotations

from functools import partial
from typing import Iterator, Optional

from ..analysis.facts import FileFacts, MoveBeforeWrap
from ..analysis.facts import OptimizerBeforeMove as OptimizerOrder
from ..fixes import SAFE, UNSAFE, Fix
from ..fixes.recipes import reorder_move
from .base import ERROR, INFO, WARNING, Finding, Rule
from .context import RuleContext


class DataParallelOnCpu(Rule):
    code = "DEV201"
    name = "data-parallel-on-cpu"
    severity = ERROR
    summary = "A DataParallel/DistributedDataParallel module runs while its parameters are still on the CPU."
    why = """
`nn.DataParallel` replicates the module from `device_ids[0]` and checks that every
parameter is there before each forward pass; `DistributedDataParallel` with
`device_ids` checks it when it is built. A wrapped model that never reached the GPU
runs on a laptop (no GPUs: no replication) and fails on the first forward on a GPU
machine with "module must have its parameters and buffers on device cuda:0".

`DistributedDataParallel(model, device_ids=[gpu])` for a model on a device chosen
by availability is reported too: where there is no GPU, that device is the CPU,
and DDP rejects GPU `device_ids` for a CPU module (pass `None` there).
"""
    example = """
model = nn.DataParallel(Net())
for x, y in loader:
    out = model(x)            # the module is still on the CPU
"""
    use_instead = """
model = nn.DataParallel(Net()).to(device)
for x, y in loader:
    out = model(x)
"""
    invalid = ("""
import torch
from torch import nn
model = nn.DataParallel(nn.Linear(4, 2))
x = torch.randn(8, 4)
out = model(x)  # expect: DEV201
""",)
    valid = ("""
import torch
from torch import nn
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.DataParallel(nn.Linear(4, 2))
model.to(device)
out = model(torch.randn(8, 4))
""",)

    def check(self, facts: FileFacts, context: RuleContext) -> Iterator[Finding]:
        for fact in facts.parallel_on_cpu:
            wrapped = fact.module.value.wrapped_at
            made = f" (made on line {context.line_of(wrapped)})" if wrapped is not None and wrapped is not fact.node else ""
            if fact.without_gpu:
                yield Finding(fact.node, (
                    f"{fact.wrapper} is given `device_ids` for {context.operand(fact.module)}, which is on "
                    f"{context.where(fact.module.value)}: on a machine without a GPU that is the CPU, and DDP "
                    "raises; pass `device_ids` only when the device is a GPU"))
                continue
            yield Finding(fact.node, (
                f"{fact.wrapper}{made} runs {context.operand(fact.module)} while its parameters are on "
                f"{context.where(fact.module.value)}; move the module to the GPU first"))


class DeviceIdsMismatch(Rule):
    code = "DEV202"
    name = "device-ids-mismatch"
    severity = ERROR
    summary = "The wrapped module sits on a GPU other than `device_ids[0]`."
    why = """
DataParallel and DistributedDataParallel expect the module on `device_ids[0]`
(DataParallel gathers outputs there too). A module moved to `cuda:1` and wrapped
with `device_ids=[0, 1]` fails on the first forward pass, and so does a wrapper
moved after the wrap: `DataParallel(model, device_ids=[1, 0]).cuda()` puts the
module on the current GPU, cuda:0.
"""
    example = """
model = Net().cuda(1)
model = nn.DataParallel(model, device_ids=[0, 1])
"""
    use_instead = """
model = Net().cuda(0)
model = nn.DataParallel(model, device_ids=[0, 1])
"""
    invalid = ("""
import torch
from torch import nn
if torch.cuda.is_available():
    model = nn.Linear(4, 2).to("cuda:1")
    model = nn.DataParallel(model, device_ids=[0, 1])  # expect: DEV202
""",)
    valid = ("""
import torch
from torch import nn
if torch.cuda.is_available():
    model = nn.Linear(4, 2).to("cuda:0")
    model = nn.DataParallel(model, device_ids=[0, 1])
""",)

    def check(self, facts: FileFacts, context: RuleContext) -> Iterator[Finding]:
        for fact in facts.device_ids_mismatches:
            placed_on = f"{context.operand(fact.module)} is on {context.where(fact.module.value)}"
            # a GPU per rank, or a list read at run time: reported where the module was placed, as
            # that is the line to change
            if fact.per_rank:
                yield Finding(fact.module.value.origin or fact.node, (
                    f"{placed_on} in every process but device_ids is [{fact.per_rank}], each rank's own GPU; "
                    f"place the module on torch.device(\"cuda\", {fact.per_rank})"))
                continue
            if fact.unread_ids:
                yield Finding(fact.module.value.origin or fact.node, (
                    f"{placed_on} but device_ids is `{fact.unread_ids}` (line {context.line_of(fact.wrap or fact.node)}), chosen "
                    f"at run time and not counted from 0; place the module on "
                    f"torch.device(\"cuda\", {fact.unread_ids}[0])"))
                continue
            ids = ("DataParallel's default device_ids (every GPU) start at 0" if fact.default_ids
                   else f"device_ids[0] is {fact.first_id}")
            wrapped = f" (wrapped on line {context.line_of(fact.wrap)})" if fact.wrap is not None else ""
            yield Finding(fact.node, f"{placed_on} but {ids}{wrapped}; the module must sit on device_ids[0]")


class OptimizerBeforeMove(Rule):
    code = "DEV203"
    fixable = True
    fix_summary = "moves the model's `.to()` statement above the optimizer when both sit in one block and the move needs nothing defined in between (unsafe: code in between now sees the model on the device)"
    name = "optimizer-before-move"
    severity = WARNING
    summary = "The optimizer is built while the model is on the CPU, and the model moves afterwards."
    why = """
`Module.to()` keeps parameter identity, so an optimizer built before the move
usually still works, but only by luck: any optimizer state that exists before the
move (eager-state optimizers, a restored checkpoint, parameters replaced by
`torch.__future__` conversion settings) stays on the CPU and crashes `step()`.
PyTorch's documentation asks for the move first: "If you need to move a model to
GPU via .cuda(), please do so before constructing optimizers for it."

A tensor is not a module: `Tensor.to()` returns a copy. An optimizer built on a
tensor itself (`Adam([log_alpha])`) that the code then rebinds to its moved copy
(`log_alpha = log_alpha.to(device)`) keeps updating the CPU original, so the value
the code uses never learns; that rebinding is reported.
"""
    example = """
model = Net()
optimizer = torch.optim.Adam(model.parameters())
model.to(device)
"""
    use_instead = """
model = Net().to(device)
optimizer = torch.optim.Adam(model.parameters())
"""
    invalid = ("""
import torch
from torch import nn
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)  # expect: DEV203
model.to(device)
""",)
    valid = ("""
import torch
from torch import nn
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
""",)

    def check(self, facts: FileFacts, context: RuleContext) -> Iterator[Finding]:
        # (where some run loads state before the same move, DEV204 says it: the construction alone
        # is the lesser part of that bug)
        stateful_moves = {id(fact.move) for fact in facts.optimizers_before_move if fact.state}
        for fact in facts.optimizers_before_move:
            if fact.copied_tensor:
                yield Finding(fact.move, (
                    f"`{context.text_of(fact.move)}` rebinds the name to a copy of a CPU tensor that the "
                    f"{fact.optimizer} built on line {context.line_of(fact.node)} holds itself: the optimizer keeps "
                    "updating the CPU tensor, never this copy; create the tensor on the device (`device=`) before "
                    "building the optimizer"))
            elif not fact.state and id(fact.move) not in stateful_moves:
                yield Finding(fact.node, (
                    f"{_sentence_start(fact.optimizer)} is built while the model is on the CPU; the model moves on line "
                    f"{context.line_of(fact.move)}: build the optimizer after the move"),
                    partial(_move_first_fix, fact, context))


def _sentence_start(words: str) -> str:
    """`optimizer` -> `Optimizer`, `SGD` as it is."""
    return words[:1].upper() + words[1:]


def _move_first_fix(fact: OptimizerOrder, context: RuleContext) -> Optional[Fix]:
    """Move the model's `.to()` statement above the optimizer (unsafe: code in between now sees
    the model on the device)."""
    if fact.of_several:
        return None
    reordered = reorder_move(context, fact.move, fact.node, before=True)
    if reordered is None:
        return None
    return Fix(UNSAFE, f"Move the model before building or loading the {fact.optimizer}", tuple(reordered[0]))


class OptimizerStateBeforeMove(Rule):
    code = "DEV204"
    fixable = True
    fix_summary = "moves the model's `.to()` statement above the state load or the optimizer, as for DEV203 (unsafe)"
    name = "optimizer-state-before-move"
    severity = ERROR
    summary = "Optimizer state is created or loaded on the CPU before the model moves to the accelerator."
    why = """
`optimizer.load_state_dict()` puts each state tensor on the device of its parameter
*at load time*, and Adagrad creates its state when it is built. When the model moves
afterwards, the parameters go to the GPU and the state stays on the CPU: the first
`optimizer.step()` fails with "Expected all tensors to be on the same device".
"""
    example = """
model = Net()
optimizer = torch.optim.Adam(model.parameters())
optimizer.load_state_dict(checkpoint["optimizer"])
model.to(device)
"""
    use_instead = """
model = Net().to(device)
optimizer = torch.optim.Adam(model.parameters())
optimizer.load_state_dict(checkpoint["optimizer"])
"""
    invalid = ("""
import torch
from torch import nn
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2)
optimizer = torch.optim.Adagrad(model.parameters())  # expect: DEV204
model.to(device)
""",)
    valid = ("""
import torch
from torch import nn
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2).to(device)
optimizer = torch.optim.Adagrad(model.parameters())
""",)

    def check(self, facts: FileFacts, context: RuleContext) -> Iterator[Finding]:
        for fact in facts.optimizers_before_move:
            if fact.state:
                where = "here" if fact.loaded_inside is None else \
                    f"in this call (line {context.line_of(fact.loaded_inside)})"
                yield Finding(fact.node, (
                    f"{fact.optimizer} state lands on the CPU {where}, before the model moves on line "
                    f"{context.line_of(fact.move)}: step() will mix CPU state with GPU parameters"),
                    partial(_move_first_fix, fact, context))


class DistributedRanksShareGpu(Rule):
    code = "DEV205"
    name = "ddp-ranks-share-gpu"
    severity = ERROR
    summary = "Distributed code places work on plain `cuda` and never picks a GPU per rank."
    why = """
Every process of a distributed job sees all GPUs, and plain `"cuda"` / `.cuda()`
means the *current* device, which is GPU 0 unless the process calls
`torch.cuda.set_device(local_rank)`. All ranks then pile onto GPU 0: out of memory,
or NCCL fails with "Duplicate GPU detected".
"""
    example = """
dist.init_process_group("nccl")
model = Net().cuda()
model = DDP(model, device_ids=[local_rank])
"""
    use_instead = """
dist.init_process_group("nccl")
torch.cuda.set_device(local_rank)
model = Net().cuda(local_rank)
model = DDP(model, device_ids=[local_rank])
"""
    invalid = ("""
import torch
import torch.distributed as dist
from torch import nn
dist.init_process_group("nccl")
model = nn.Linear(4, 2).cuda()  # expect: DEV205
model = nn.parallel.DistributedDataParallel(model)
""",)
    valid = ("""
import os
import torch
import torch.distributed as dist
from torch import nn
dist.init_process_group("nccl")
local_rank = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local_rank)
model = nn.Linear(4, 2).cuda()
model = nn.parallel.DistributedDataParallel(model, device_ids=[local_rank])
""",)

    def check(self, facts: FileFacts, context: RuleContext) -> Iterator[Finding]:
        evidence = facts.distributed
        if (evidence.setup is None or evidence.set_device or not evidence.shared_placements
                or evidence.per_rank_placements):
            return
        first = min(evidence.shared_placements, key=context.line_of)
        yield Finding(first, (
            f"distributed code (line {context.line_of(evidence.setup)}) places work on the current GPU with no "
            "per-rank index and never calls torch.cuda.set_device(local_rank): every rank lands on GPU 0"))


class VisibleDevicesAfterInit(Rule):
    code = "DEV206"
    name = "visible-devices-after-init"
    severity = WARNING
    summary = "`CUDA_VISIBLE_DEVICES` is set after CUDA was initialised; the process ignores it."
    why = """
The CUDA driver reads `CUDA_VISIBLE_DEVICES` once, when it initialises. Any
`torch.cuda` call (including `is_available()` and `device_count()`) or a tensor put on
the GPU initialises it; setting the variable afterwards changes nothing for this
process, so the job runs on the wrong GPUs.
"""
    example = """
n = torch.cuda.device_count()
os.environ["CUDA_VISIBLE_DEVICES"] = "1"
"""
    use_instead = """
os.environ["CUDA_VISIBLE_DEVICES"] = "1"
n = torch.cuda.device_count()
"""
    invalid = ("""
import os
import torch
if torch.cuda.is_available():
    print(torch.cuda.device_count())
os.environ["CUDA_VISIBLE_DEVICES"] = "1"  # expect: DEV206
""",)
    valid = ("""
import os
import torch
os.environ["CUDA_VISIBLE_DEVICES"] = "1"
if torch.cuda.is_available():
    print(torch.cuda.device_count())
""",)

    def check(self, facts: FileFacts, context: RuleContext) -> Iterator[Finding]:
        for fact in facts.visible_devices_late:
            yield Finding(fact.node, (
                f"CUDA_VISIBLE_DEVICES is set after CUDA was initialised on line {context.line_of(fact.initialised)}; "
                "this process will not see the change: set it before the first CUDA call"))


class MoveBeforeDataParallel(Rule):
    code = "DEV207"
    fixable = True
    fix_summary = 'moves the `.cuda()`/`.to()` statement after the wrap (safe when the two statements are adjacent, unsafe otherwise)'
    name = "move-before-data-parallel"
    severity = INFO
    default_enabled = False
    summary = "The model is moved before the DataParallel wrap (convention: wrap, then move)."
    why = """
PyTorch accepts both orders: `DataParallel` only needs the module on `device_ids[0]`
by the time it runs. This is a house-style rule for code bases that follow the
canonical order of their seeds and examples, `model = nn.DataParallel(model).to(device)`,
which keeps the placement in one place (the wrapper) and makes it obvious that the
wrapper, not the inner module, is what moves. Off by default.
"""
    example = """
model = Net().to(device)
model = nn.DataParallel(model)
"""
    use_instead = """
model = nn.DataParallel(Net())
model.to(device)
"""
    invalid = ("""
import torch
from torch import nn
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2)
model = model.to(device)
model = nn.DataParallel(model)  # expect: DEV207
""",)
    valid = ("""
import torch
from torch import nn
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.DataParallel(nn.Linear(4, 2))
model.to(device)
""",)

    def check(self, facts: FileFacts, context: RuleContext) -> Iterator[Finding]:
        for fact in facts.moves_before_wrap:
            yield Finding(fact.node, (
                f"the module is moved on line {context.line_of(fact.move)} before this DataParallel wrap; "
                "house style is to wrap, then move the wrapper"), partial(_wrap_first_fix, fact, context))


def _wrap_first_fix(fact: MoveBeforeWrap, context: RuleContext) -> Optional[Fix]:
    """Move the `.cuda()` statement after the wrap; safe when nothing runs between the two."""
    reordered = reorder_move(context, fact.move, fact.node, before=False)
    if reordered is None:
        return None
    edits, adjacent = reordered
    return Fix(SAFE if adjacent else UNSAFE, "Wrap first, then move", tuple(edits))


class WrapperAttribute(Rule):
    code = "DEV208"
    name = "wrapper-attribute"
    severity = ERROR
    summary = "The model's own attribute is read through its DataParallel/DDP wrapper, or `.module` where it may be unwrapped."
    why = """
`nn.DataParallel` and `DistributedDataParallel` answer the `nn.Module` API and their
own settings; everything else the wrapped model defines (`config`, `generate`,
`save_pretrained`, a custom `num_classes`) lives on `wrapper.module`. Code that wraps
only on multi-GPU machines and reads `model.config` works on the laptop and the
single-GPU box, and raises AttributeError on the first multi-GPU run. The opposite
mistake is as common: `model.module` written for the wrapped case, run on a
machine where the model was never wrapped. A lookup with a fallback,
`getattr(model, "device", torch.device("cpu"))`, raises nothing on the wrapper: it
quietly gives the fallback, and the batch goes to the CPU.

Unwrap once where both cases meet: `getattr(model, "module", model)`, or test
`isinstance(model, (nn.DataParallel, DistributedDataParallel))`.
"""
    example = """
model = Net().to(device)
if torch.cuda.device_count() > 1:
    model = nn.DataParallel(model)
classes = model.num_classes
"""
    use_instead = """
model = Net().to(device)
if torch.cuda.device_count() > 1:
    model = nn.DataParallel(model)
classes = getattr(model, "module", model).num_classes
"""
    invalid = ("""
import torch
from torch import nn
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)
        self.num_classes = 2
    def forward(self, x):
        return self.fc(x)
model = Net()
if torch.cuda.device_count() > 1:
    model = nn.DataParallel(model).cuda()
print(model.num_classes)  # expect: DEV208
""", """
import torch
from torch import nn
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)
    def forward(self, x):
        return self.fc(x)
model = Net()
if torch.cuda.device_count() > 1:
    model = nn.DataParallel(model).cuda()
torch.save(model.module.state_dict(), "net.pt")  # expect: DEV208
""")
    valid = ("""
import torch
from torch import nn
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)
        self.num_classes = 2
    def forward(self, x):
        return self.fc(x)
model = Net()
if torch.cuda.device_count() > 1:
    model = nn.DataParallel(model).cuda()
bare = model.module if hasattr(model, "module") else model
print(bare.num_classes, model.training)
""",)

    def check(self, facts: FileFacts, context: RuleContext) -> Iterator[Finding]:
        for fact in facts.wrapper_attributes:
            model = context.operand(fact.model)
            wrapped = f" (wrapped on line {context.line_of(fact.wrapped_at)})" if fact.wrapped_at is not None else ""
            if fact.lacking == "bare":
                yield Finding(fact.node, (
                    f"{model} is a DataParallel/DDP wrapper on one path only{wrapped}; where it is not wrapped "
                    f"it has no `.module` and this raises AttributeError; unwrap with "
                    f"`getattr({context.text_of(fact.model.node)}, \"module\", {context.text_of(fact.model.node)})`"))
            elif fact.fallback is not None:
                yield Finding(fact.node, (
                    f"`{fact.attr}` is looked up on the DataParallel/DDP wrapper {model}{wrapped}: the wrapper "
                    f"has no `{fact.attr}` (the wrapped module does), so where the model is wrapped this gives "
                    f"the fallback `{context.text_of(fact.fallback)}`; look it up on `.module`"))
            else:
                yield Finding(fact.node, (
                    f"`{fact.attr}` is read through the DataParallel/DDP wrapper {model}{wrapped}: the wrapper "
                    f"has no `{fact.attr}` (the wrapped module does) and this raises AttributeError; read it "
                    f"from `.module`"))


class StateDictPrefixes(Rule):
    code = "DEV209"
    name = "state-dict-prefix-mismatch"
    severity = ERROR
    summary = "A state dict saved through a DataParallel/DDP wrapper is loaded into the bare model, or the other way round."
    why = """
A DataParallel or DistributedDataParallel wrapper holds the model as its `module`
attribute, so the wrapper's `state_dict()` names every tensor `module.<name>`.
Loading that dict into the bare model (an evaluation script, a fresh `Net()`), or
loading the bare model's dict into a wrapper, fails with "Missing key(s) in
state_dict ... Unexpected key(s) ... module.fc.weight". A model wrapped only where
there are several GPUs saves different names on different machines, so the
checkpoint a single-GPU test wrote loads fine and the cluster's does not.

Save the bare model's state (`model.module.state_dict()`, or the model kept before
wrapping) and load into the bare model; `strict=False` is no fix, it silently skips
every tensor.
"""
    example = """
model = nn.DataParallel(Net()).cuda()
torch.save(model.state_dict(), "net.pt")
net = Net()
net.load_state_dict(torch.load("net.pt"))   # keys start with `module.`
"""
    use_instead = """
model = nn.DataParallel(Net()).cuda()
torch.save(model.module.state_dict(), "net.pt")
net = Net()
net.load_state_dict(torch.load("net.pt", map_location="cpu"))
"""
    invalid = ("""
import torch
from torch import nn
model = nn.DataParallel(nn.Linear(4, 2))
torch.save(model.state_dict(), "net.pt")
net = nn.Linear(4, 2)
net.load_state_dict(torch.load("net.pt", map_location="cpu"))  # expect: DEV209
""", """
import torch
from torch import nn
net = nn.Linear(4, 2)
state = net.state_dict()
model = nn.DataParallel(nn.Linear(4, 2))
model.load_state_dict(state)  # expect: DEV209
""")
    valid = ("""
import torch
from torch import nn
model = nn.DataParallel(nn.Linear(4, 2))
torch.save(model.module.state_dict(), "net.pt")
net = nn.Linear(4, 2)
net.load_state_dict(torch.load("net.pt", map_location="cpu"))
""", """
import torch
from torch import nn
def restore(model, path):
    model.load_state_dict(torch.load(path, map_location="cpu"))
""")

    def check(self, facts: FileFacts, context: RuleContext) -> Iterator[Finding]:
        for fact in facts.state_dict_prefixes:
            model, state = context.operand(fact.model), context.operand(fact.state)
            wrap = context.line_of(fact.wrapped_at)
            if fact.prefixed_state:
                yield Finding(fact.node, (
                    f"{state} was taken from a DataParallel/DDP wrapper (wrapped on line {wrap}): its keys start "
                    f"with `module.`, and strict loading into the bare {model} fails with missing and unexpected "
                    f"keys; save the wrapped model's `.module.state_dict()`"))
            else:
                yield Finding(fact.node, (
                    f"{model} is a DataParallel/DDP wrapper (wrapped on line {wrap}) whose keys start with "
                    f"`module.`, but {state} holds the bare model's keys: strict loading fails with missing and "
                    f"unexpected keys; load into `.module`"))


PARALLEL_RULES = (
    DataParallelOnCpu, DeviceIdsMismatch, OptimizerBeforeMove, OptimizerStateBeforeMove,
    DistributedRanksShareGpu, VisibleDevicesAfterInit, MoveBeforeDataParallel, WrapperAttribute,
    StateDictPrefixes,
)
