"""DEV4xx: work on the host, or waiting for it, on every step of a hot loop."""
from __future__ import annotations

from functools import partial
from typing import Iterator, Optional

import libcst as cst

from ..analysis import torch_api as api
from ..analysis.facts import (
    CREATED_THEN_MOVED, FIELD_COPIED_EACH_STEP, HOST_PREPROCESSING, HOST_WORK_CONVERTED, MODEL_MOVED_IN_LOOP, FileFacts,
    HotPathWaste, TRUTH_TESTS,
)
from ..analysis.names import dotted_name, last_identifier
from ..fixes import SAFE, UNSAFE, Fix
from ..fixes.recipes import takes_keyword
from .base import INFO, WARNING, Finding, Rule
from .context import RuleContext


class HostSyncInLoop(Rule):
    code = "DEV401"
    name = "host-sync-in-loop"
    severity = WARNING
    summary = "A training, evaluation or inference step waits for the accelerator to copy a value to the host."
    why = """
CUDA runs asynchronously: the Python loop queues work and races ahead. `.item()`,
`.cpu()`, `.numpy()`, `.tolist()`, `float(t)`, `print(t)` and `if t:` on a GPU tensor
stop the loop until every queued kernel has finished, every step. The GPU then idles
while Python prepares the next batch. Keep running totals on the device and read
them under a logging interval, or once after the loop.
"""
    example = """
for x, y in loader:
    loss = criterion(model(x.to(device)), y.to(device))
    loss.backward()
    optimizer.step()
    total += loss.item()
"""
    use_instead = """
total = torch.zeros((), device=device)
for step, (x, y) in enumerate(loader):
    loss = criterion(model(x.to(device)), y.to(device))
    loss.backward()
    optimizer.step()
    total += loss.detach()
    if step % 100 == 0:
        print(total.item() / (step + 1))
"""
    invalid = ("""
import torch
from torch import nn
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 1).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
total = 0.0
for step in range(100):
    x = torch.randn(8, 4, device=device)
    loss = model(x).pow(2).mean()
    loss.backward()
    optimizer.step()
    total += loss.item()  # expect: DEV401
""",)
    valid = ("""
import torch
from torch import nn
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 1).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(100):
    x = torch.randn(8, 4, device=device)
    loss = model(x).pow(2).mean()
    loss.backward()
    optimizer.step()
    if step % 10 == 0:
        print(loss.item())
""",)

    def check(self, facts: FileFacts, context: RuleContext) -> Iterator[Finding]:
        for fact in facts.host_syncs:
            every = ("for every item of every step" if fact.per_item
                     else "for every step it generates" if fact.per_token else "on every step")
            remedy = ("collect the steps on the device and read them once after the loop" if fact.per_token
                      and fact.collected
                      else "keep the value it tests on the host (a schedule made once) or choose on the device "
                      "(`torch.where`)" if fact.per_token and fact.how in TRUTH_TESTS
                      else "keep it on the device or sync under a logging interval")
            yield Finding(fact.node, (
                f"{fact.how} on {context.operand(fact.tensor)}, on {context.where(fact.tensor.value)}, waits for the "
                f"accelerator {every}; {remedy}"))


class CreatedOnHostThenMoved(Rule):
    code = "DEV402"
    fixable = True
    fix_summary = 'creates it on the device: `torch.zeros(n, device=d)` instead of `torch.zeros(n).to(d)` (safe; unsafe for random factories, which draw other numbers on the device)'
    name = "created-on-host-then-moved"
    severity = WARNING
    summary = "A tensor is created on the CPU and copied to the device on every step."
    why = """
`torch.zeros(n).to(device)` allocates and fills a CPU tensor, then copies it over the
PCIe bus, in every forward pass or training step. The factory can build it on the
device directly with `device=`, which costs one kernel and no copy. (A tensor built
from host data, `torch.tensor(values)`, needs that copy anyway and is not reported.)

A CPU tensor an object keeps (class weights made in `__init__`) and copies with
`.to(logits.device)` in every step is the same waste: move it once, or register it as
a buffer so that the module's own move takes it along. (This is reported for modules
and for objects that hold a device. A plain object that is never told the device, such
as a noise scheduler built before anyone knows it, has no better way than the copy.)
"""
    example = """
def forward(self, x):
    positions = torch.arange(x.size(1)).to(x.device)
"""
    use_instead = """
def forward(self, x):
    positions = torch.arange(x.size(1), device=x.device)
"""
    invalid = ("""
import torch
from torch import nn
class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(128, 16)
    def forward(self, x):
        positions = torch.arange(x.size(1)).to(x.device)  # expect: DEV402
        return self.embed(positions)
""",)
    valid = ("""
import torch
from torch import nn
class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(128, 16)
    def forward(self, x):
        positions = torch.arange(x.size(1), device=x.device)
        return self.embed(positions)
""",)

    def check(self, facts: FileFacts, context: RuleContext) -> Iterator[Finding]:
        for fact in facts.waste:
            if fact.kind == CREATED_THEN_MOVED and fact.subject.value.host_copy:
                yield Finding(fact.node, (
                    f"{context.operand(fact.subject)} copies host data into a CPU tensor (line "
                    f"{context.line_of(fact.subject.value.origin)}) and then to the device on every step; "
                    "copy it once with `torch.as_tensor(data, device=...)`"),
                    partial(_create_on_device_fix, fact, context))
            elif fact.kind == CREATED_THEN_MOVED:
                yield Finding(fact.node, (
                    f"{context.operand(fact.subject)} is created on the CPU (line {context.line_of(fact.subject.value.origin)}) "
                    "and copied to the device on every step; pass device= to the factory"),
                    partial(_create_on_device_fix, fact, context))
            elif fact.kind == FIELD_COPIED_EACH_STEP:
                advice = ("move it to the device once (or register it as a buffer of the module)" if fact.detail == "module"
                          else "make it on the device once, where it is made")
                yield Finding(fact.node, (
                    f"{context.operand(fact.subject)} is kept on the CPU (made on line "
                    f"{context.line_of(fact.subject.value.origin)}) and copied to the device again on every step; {advice}"))


_FACTORY_KEYWORDS_IN_THE_WAY = ("device", "generator", "requires_grad", "pin_memory", "out")


def _create_on_device_fix(fact: HotPathWaste, context: RuleContext) -> Optional[Fix]:
    """`torch.zeros(n).to(device)` -> `torch.zeros(n, device=device)`. Random factories draw other
    numbers on the device, so their fix is unsafe."""
    factory, move = fact.subject.value.origin, fact.node
    if (fact.subject.node is not factory or not isinstance(factory, cst.Call) or not isinstance(move, cst.Call)
            or last_identifier(factory) in api.FACTORIES_WITHOUT_DEVICE
            or not isinstance(move.func, cst.Attribute) or move.func.attr.value != "to"
            or any(not takes_keyword(factory, keyword) for keyword in _FACTORY_KEYWORDS_IN_THE_WAY)):
        return None
    positional = [arg for arg in move.args if arg.keyword is None]
    others = [arg for arg in move.args if arg.keyword is not None and arg.keyword.value != "non_blocking"]
    if len(positional) != 1 or others or positional[0].star:
        return None
    target = positional[0].value
    name = dotted_name(target)
    if not (isinstance(target, cst.SimpleString) or (name is not None and api.is_device_name(name.split(".")[-1]))):
        return None
    device = context.module.code_for_node(target)
    random = last_identifier(factory) in api.RANDOM_FACTORIES
    return Fix(UNSAFE if random else SAFE, f"Create it with `device={device}`",
               (context.edits.add_keyword(factory, "device", device), context.edits.remove_tail(factory, move)))


class HostPreprocessingInLoop(Rule):
    code = "DEV403"
    name = "host-preprocessing-in-loop"
    severity = WARNING
    summary = "Each batch is processed with numpy/PIL/cv2 inside the training loop."
    why = """
Work done on the batch inside the loop runs in the main process while the GPU waits.
The same work in the Dataset's `__getitem__` or its transforms runs in the DataLoader
workers, in parallel with the training step.
"""
    example = """
for images, labels in loader:
    images = np.flip(images.numpy(), axis=3)
"""
    use_instead = """
dataset = ImageFolder(root, transform=T.Compose([T.RandomHorizontalFlip(), T.ToTensor()]))
loader = DataLoader(dataset, batch_size=64, num_workers=4, pin_memory=True)
"""
    invalid = ("""
import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8, num_workers=2)
model = nn.Linear(4, 1).to(device)
for x, y in loader:
    x = torch.from_numpy(np.clip(x.numpy(), -1, 1))  # expect: DEV403
    out = model(x.to(device))
""",)
    valid = ("""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
loader = DataLoader(TensorDataset(torch.randn(64, 4).clamp(-1, 1), torch.randn(64, 1)), batch_size=8, num_workers=2)
model = nn.Linear(4, 1).to(device)
for x, y in loader:
    out = model(x.to(device))
""",)

    def check(self, facts: FileFacts, context: RuleContext) -> Iterator[Finding]:
        for fact in facts.waste:
            if fact.kind == HOST_PREPROCESSING:
                yield Finding(fact.node, (
                    f"`{fact.detail}` processes {context.operand(fact.subject)} ({context.where(fact.subject.value)}) "
                    "on the host every step; do it in the Dataset or its transforms"))
            elif fact.kind == HOST_WORK_CONVERTED:
                yield Finding(fact.node, (
                    f"each step's data ({context.origin_words(fact.subject.value)}) is worked on with numpy on the "
                    f"host (`{fact.detail}`{_work_place(fact, context)}) before it becomes a tensor here; do it in "
                    "the Dataset or its transforms, or on the device after the copy"))


def _work_place(fact: HotPathWaste, context: RuleContext) -> str:
    """`, line 21 in `preprocess`, called on line 43`: where the numpy work is, when not here."""
    if fact.work is None or context.line_of(fact.work) == context.line_of(fact.node):
        return ""
    return f", line {context.line_of(fact.work)}" + context.via_words(fact.subject.value.via, fact.node)


class LoaderNotPinned(Rule):
    code = "DEV404"
    fixable = True
    fix_summary = 'adds `pin_memory=torch.cuda.is_available()` (safe: pinned where it helps, no warning on a CPU machine)'
    name = "loader-not-pinned"
    severity = WARNING
    summary = "A DataLoader feeds the accelerator with neither `pin_memory=True` nor worker processes."
    why = """
With `num_workers=0` every batch is loaded in the training process, between steps,
while the GPU idles; without `pin_memory=True` every host-to-device copy goes through
a pageable staging buffer and cannot overlap with compute. A loader that feeds a GPU
wants workers, pinned memory, or both.
"""
    example = """
loader = DataLoader(dataset, batch_size=64, shuffle=True)
for x, y in loader:
    x, y = x.to(device), y.to(device)
"""
    use_instead = """
loader = DataLoader(dataset, batch_size=64, shuffle=True, num_workers=4, pin_memory=True)
for x, y in loader:
    x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
"""
    invalid = ("""
import torch
from torch.utils.data import DataLoader, TensorDataset
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
loader = DataLoader(TensorDataset(torch.randn(64, 4)), batch_size=8)  # expect: DEV404
for (x,) in loader:
    x = x.to(device)
""",)
    valid = ("""
import torch
from torch.utils.data import DataLoader, TensorDataset
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
loader = DataLoader(TensorDataset(torch.randn(64, 4)), batch_size=8, pin_memory=True)
for (x,) in loader:
    x = x.to(device)
""",)

    def check(self, facts: FileFacts, context: RuleContext) -> Iterator[Finding]:
        seen = set()
        for feed in facts.loader_feeds:
            # `num_workers=0` written out is a choice; it still costs every step of a training loop.
            chosen = feed.explicit_no_workers and not feed.training
            if feed.pinned is False and feed.workers is False and not chosen and id(feed.loader) not in seen:
                seen.add(id(feed.loader))
                yield Finding(feed.loader, (
                    f"this DataLoader feeds the accelerator (line {context.line_of(feed.move)}) with no workers and "
                    "no pinned memory; set num_workers and pin_memory=True"), partial(_pin_memory_fix, feed.loader, context))


class BlockingCopyFromPinned(Rule):
    code = "DEV405"
    fixable = True
    fix_summary = 'adds `non_blocking=True` (safe: a host-to-device copy stays ordered before its use)'
    name = "blocking-copy-from-pinned"
    severity = INFO
    default_enabled = False
    summary = "A batch from pinned memory is copied without `non_blocking=True`."
    why = """
Pinned memory exists so that the host-to-device copy can run asynchronously.
Without `non_blocking=True` the copy still blocks the Python thread until it is done,
so the pinned buffers buy little. Off by default: the gain depends on the pipeline.
"""
    example = """
loader = DataLoader(dataset, batch_size=64, num_workers=4, pin_memory=True)
for x, y in loader:
    x = x.to(device)
"""
    use_instead = """
loader = DataLoader(dataset, batch_size=64, num_workers=4, pin_memory=True)
for x, y in loader:
    x = x.to(device, non_blocking=True)
"""
    invalid = ("""
import torch
from torch.utils.data import DataLoader, TensorDataset
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
loader = DataLoader(TensorDataset(torch.randn(64, 4)), batch_size=8, pin_memory=True)
for (x,) in loader:
    x = x.to(device)  # expect: DEV405
""",)
    valid = ("""
import torch
from torch.utils.data import DataLoader, TensorDataset
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
loader = DataLoader(TensorDataset(torch.randn(64, 4)), batch_size=8, pin_memory=True)
for (x,) in loader:
    x = x.to(device, non_blocking=True)
""",)

    def check(self, facts: FileFacts, context: RuleContext) -> Iterator[Finding]:
        seen = set()
        for feed in facts.loader_feeds:
            if feed.pinned and not feed.non_blocking and id(feed.move) not in seen:
                seen.add(id(feed.move))
                yield Finding(feed.move, (
                    f"the batch comes from pinned memory (DataLoader on line {context.line_of(feed.loader)}) but the "
                    "copy blocks; pass non_blocking=True"), partial(_non_blocking_fix, feed.move, context))


def _pin_memory_fix(loader: cst.CSTNode, context: RuleContext) -> Optional[Fix]:
    """`pin_memory=torch.cuda.is_available()`: pinned where it helps, and no warning about
    pinning without an accelerator on a CPU machine. Safe."""
    if not isinstance(loader, cst.Call) or not takes_keyword(loader, "pin_memory"):
        return None
    torch, import_edit = context.edits.spell("torch")
    value = f"{torch}.cuda.is_available()"
    edits = (context.edits.add_keyword(loader, "pin_memory", value),) + ((import_edit,) if import_edit else ())
    return Fix(SAFE, f"Pass `pin_memory={value}`", edits)


def _non_blocking_fix(move: cst.CSTNode, context: RuleContext) -> Optional[Fix]:
    """Safe: a host-to-device copy stays ordered before the kernels that use it."""
    if not isinstance(move, cst.Call) or not takes_keyword(move, "non_blocking"):
        return None
    return Fix(SAFE, "Pass `non_blocking=True`", (context.edits.add_keyword(move, "non_blocking", "True"),))


class ModelMovedInLoop(Rule):
    code = "DEV406"
    name = "model-moved-in-loop"
    severity = WARNING
    summary = "The model is moved to the device on every iteration of a training or inference loop."
    why = """
`model.to(device)` walks every parameter and buffer each time it is called. Inside the
loop it is at best wasted work every step, and after an evaluation that moved the
model elsewhere it silently changes where the next steps run. Move the model once,
before the loop.
"""
    example = """
for x, y in loader:
    model.to(device)
    out = model(x.to(device))
"""
    use_instead = """
model.to(device)
for x, y in loader:
    out = model(x.to(device))
"""
    invalid = ("""
import torch
from torch import nn
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 1)
for step in range(10):
    model.to(device)  # expect: DEV406
    out = model(torch.randn(8, 4, device=device))
""",)
    valid = ("""
import torch
from torch import nn
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 1).to(device)
for step in range(10):
    out = model(torch.randn(8, 4, device=device))
""",)

    def check(self, facts: FileFacts, context: RuleContext) -> Iterator[Finding]:
        for fact in facts.waste:
            if fact.kind == MODEL_MOVED_IN_LOOP:
                yield Finding(fact.node, (
                    f"{context.operand(fact.subject)} is moved on every iteration of this loop; "
                    "move it once before the loop"))


HOT_PATH_RULES = (
    HostSyncInLoop, CreatedOnHostThenMoved, HostPreprocessingInLoop, LoaderNotPinned, BlockingCopyFromPinned,
    ModelMovedInLoop,
)
