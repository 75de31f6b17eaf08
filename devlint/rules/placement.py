"""DEV1xx: placement bugs that crash with "Expected all tensors to be on the same device"."""
from __future__ import annotations

from functools import partial
from typing import Iterator, Optional

import libcst as cst

from ..analysis.facts import (
    MODEL_CALL, OPERATION, DeviceMismatch, DiscardedMove, FileFacts, HostConversion, UnregisteredState,
)
from ..analysis.lattice import BATCH, SOURCE_FACTORY, SOURCE_LOAD, SOURCE_TOKENIZER, TENSOR
from ..analysis.names import dotted_name
from ..fixes import SAFE, UNSAFE, Fix
from ..fixes.recipes import move_to, mutated_in_place, rebind_before, takes_keyword, to_host
from .base import Finding, Rule
from .context import RuleContext

_LATE_SOURCES = (SOURCE_TOKENIZER, SOURCE_LOAD)


def _device_hint(node, context: RuleContext) -> str:
    if isinstance(node, (cst.Name, cst.Attribute)):
        return f"`device={context.text_of(node)}.device`"
    return "`device=` set to the device of the tensor it meets"


def _is_late_input(mismatch: DeviceMismatch) -> bool:
    """A model fed tokenizer output or a loaded checkpoint: DEV107's case."""
    return mismatch.context == MODEL_CALL and mismatch.offender.value.source in _LATE_SOURCES


def _is_factory_mix(mismatch: DeviceMismatch) -> bool:
    # (a factory tensor that is on the accelerator, fed to a model left on the CPU, is no tensor
    # made without `device=`: the model is what stayed behind, DEV101)
    value = mismatch.offender.value
    return value.source == SOURCE_FACTORY and not value.explicit_device and value.device.is_cpu


class ModelInputDeviceMismatch(Rule):
    code = "DEV101"
    fixable = True
    fix_summary = 'moves the input on a line of its own before the call, `x = x.to(device)` with the device the model was moved with, or where it is used when it is not a plain name (safe; tried after the other fixes, which often remove the cause)'
    fix_after_others = True
    name = "model-input-device-mismatch"
    summary = "A model is called with an input that lives on another device."
    why = """
A module's parameters and its inputs must be on the same device. Moving the
model with `model.to(device)` does not move the batches fed to it: on a CPU
machine everything is on the CPU and the script runs, on a GPU machine the
first forward pass fails with "Expected all tensors to be on the same device".
"""
    example = """
model = Net().to(device)
for x, y in loader:
    out = model(x)          # x is still on the CPU
"""
    use_instead = """
model = Net().to(device)
for x, y in loader:
    x, y = x.to(device), y.to(device)
    out = model(x)
"""
    invalid = ("""
import torch
from torch import nn
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2).to(device)
x = torch.randn(8, 4)
out = model(x)  # expect: DEV101
""",)
    valid = ("""
import torch
from torch import nn
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2).to(device)
x = torch.randn(8, 4, device=device)
out = model(x)
""",)

    def check(self, facts: FileFacts, context: RuleContext) -> Iterator[Finding]:
        for mismatch in facts.mismatches:
            if mismatch.context != MODEL_CALL or _is_late_input(mismatch) or _is_factory_mix(mismatch):
                continue
            if mismatch.replaced_by is not None:
                yield Finding(mismatch.node, (
                    f"{context.operand(mismatch.offender)} was replaced on line {context.line_of(mismatch.replaced_by)} "
                    f"by a new module on the CPU after {context.operand(mismatch.anchor)} moved to "
                    f"{context.where(mismatch.anchor.value)}; move the model again after replacing the part"))
                continue
            yield Finding(mismatch.node, (
                f"{context.operand(mismatch.anchor)} is on {context.where(mismatch.anchor.value)} but its input "
                f"{context.operand(mismatch.offender)} is on {context.where(mismatch.offender.value)}"),
                partial(_move_offender_fix, mismatch, context))


class OperandDeviceMismatch(Rule):
    code = "DEV102"
    fixable = True
    fix_summary = 'moves the operand left behind on a line of its own before the failing statement, `y = y.to(out.device)`, or where it is used when it is not a plain name (safe; tried after the other fixes)'
    fix_after_others = True
    name = "operand-device-mismatch"
    summary = "The operands of one operation live on different devices."
    why = """
Every tensor operation (arithmetic, `torch.cat`, a loss function) needs all
its tensor operands on one device. The classic case is a loss computed from a
model output on the GPU and labels that were never moved: it passes every
CPU-only test and fails on the first step on a GPU machine.
"""
    example = """
out = model(x.to(device))
loss = F.cross_entropy(out, y)   # y is still on the CPU
"""
    use_instead = """
out = model(x.to(device))
loss = F.cross_entropy(out, y.to(device))
"""
    invalid = ("""
import torch
import torch.nn.functional as F
device = "cuda" if torch.cuda.is_available() else "cpu"
out = torch.randn(8, 3, device=device)
y = torch.tensor([0, 1, 2, 0, 1, 2, 0, 1])
loss = F.cross_entropy(out, y)  # expect: DEV102
""",)
    valid = ("""
import torch
import torch.nn.functional as F
device = "cuda" if torch.cuda.is_available() else "cpu"
out = torch.randn(8, 3, device=device)
y = torch.tensor([0, 1, 2, 0, 1, 2, 0, 1], device=device)
loss = F.cross_entropy(out, y)
scaled = out * torch.tensor(2.0)
""",)

    def check(self, facts: FileFacts, context: RuleContext) -> Iterator[Finding]:
        for mismatch in facts.mismatches:
            if mismatch.context != OPERATION or _is_factory_mix(mismatch):
                continue
            yield Finding(mismatch.node, (
                f"{context.operand(mismatch.offender)} is on {context.where(mismatch.offender.value)} but "
                f"{context.operand(mismatch.anchor)} is on {context.where(mismatch.anchor.value)} in `{mismatch.operation}`"),
                partial(_move_offender_fix, mismatch, context))


class FactoryMissingDevice(Rule):
    code = "DEV103"
    fixable = True
    fix_summary = 'adds `device=h.device` to the factory, `h` being the tensor it meets, when `h` exists where the factory runs (safe)'
    name = "factory-missing-device"
    summary = "A tensor created without `device=` in `forward` or a loop meets a tensor or module on a device."
    why = """
`torch.zeros`, `torch.arange`, `torch.ones` and the other factories create on
the default device, the CPU, unless told otherwise. Inside `forward` or a
training loop the tensor they make meets activations on the GPU (or is fed to
a submodule there, like an LSTM's initial state) and fails there, while every
CPU test passes.
"""
    example = """
def forward(self, x):
    mask = torch.ones(x.size(0), x.size(1))
    return x * mask
"""
    use_instead = """
def forward(self, x):
    mask = torch.ones(x.size(0), x.size(1), device=x.device)
    return x * mask
"""
    invalid = ("""
import torch
from torch import nn
class Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)
    def forward(self, x):
        h = self.proj(x)
        noise = torch.randn(x.shape[0], 4)
        return h + noise  # expect: DEV103
model = Gate().to("cuda" if torch.cuda.is_available() else "cpu")
""",)
    valid = ("""
import torch
from torch import nn
class Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)
    def forward(self, x):
        noise = torch.randn(x.shape[0], 4, device=x.device)
        zeros = torch.zeros_like(x)
        ones = x.new_ones(x.shape)
        return self.proj(x) + noise + zeros + ones
""",)

    def check(self, facts: FileFacts, context: RuleContext) -> Iterator[Finding]:
        for mismatch in facts.mismatches:
            if not _is_factory_mix(mismatch):
                continue
            offender, anchor = mismatch.offender, mismatch.anchor
            if mismatch.context == MODEL_CALL:
                meets = f"is fed to {context.operand(anchor)} on {context.where(anchor.value)}"
                hint = "`device=` set to the device of the module's input (e.g. `device=x.device`)"
            else:
                meets = f"meets {context.operand(anchor)} on {context.where(anchor.value)} in `{mismatch.operation}`"
                hint = _device_hint(anchor.node, context)
            yield Finding(mismatch.node, (
                f"{context.operand(offender)} is on {context.where(offender.value)} without `device=` but "
                f"{meets}; create it with {hint}"), partial(_factory_device_fix, mismatch, context))


def _move_offender_fix(mismatch: DeviceMismatch, context: RuleContext) -> Optional[Fix]:
    """Move the value left behind: a name is moved on a line of its own before the failing
    statement (`y = y.to(out.device)`), so its later uses see it moved too; anything else where
    it is used (`loss_fn(out, batch["y"].to(out.device))`). Safe (a no-op on the CPU); tried only
    after the other fixes, which often remove the cause."""
    offender = mismatch.offender
    movable = offender.value.movable_tensor or (offender.value.source == SOURCE_TOKENIZER and offender.value.kind == BATCH)
    device = _anchor_device(mismatch, context)
    if not movable or device is None or isinstance(offender.node, cst.StarredElement):
        return None
    if _updated_in_place(mismatch.node, offender.node):
        return None  # (`ema.mul_(d).add_(p)`: a moved copy would take the update meant for the tensor)
    statement = context.edits.statement(mismatch.node)
    if isinstance(offender.node, cst.Name) and mutated_in_place(context, mismatch.node, offender.node.value):
        return None  # a moved copy would take the in-place updates meant for the tensor itself
    if isinstance(offender.node, cst.Name) and statement is not None:
        line = rebind_before(context, statement, offender.node.value, device)
        if line is not None:
            return Fix(SAFE, f"Move `{offender.node.value}` to `{device}` before this line", (line,))
    return Fix(SAFE, f"Move {context.operand(offender)} to `{device}` where it is used",
               tuple(move_to(context, offender.node, device)))


def _updated_in_place(node: cst.CSTNode, operand: cst.CSTNode) -> bool:
    """Is `operand` what the failing operation updates: the receiver of an in-place method
    (`shadow.add_(p)`) or the target of an augmented assignment (`self.total += loss`)?"""
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.value is operand:
        name = node.func.attr.value
        return name.endswith("_") and not name.endswith("__")
    return isinstance(node, cst.AugAssign) and node.target is operand


def _anchor_device(mismatch: DeviceMismatch, context: RuleContext) -> Optional[str]:
    """How to name the anchor's device at the failing line: `out.device` for a tensor, or the
    device a module was moved with."""
    anchor = mismatch.anchor
    if anchor.value.kind == TENSOR and isinstance(anchor.node, (cst.Name, cst.Attribute)):
        expression = f"{context.module.code_for_node(anchor.node)}.device"
    else:
        move = anchor.value.origin
        # `self.head` seen from `forward` moved with its owner (`model.to(device)` elsewhere): that
        # call names the device in its caller's words, not in this method's
        expression = _module_move_target(move, context)
        if (expression is not None and not expression.startswith(("self.", '"', "'"))
                and (dotted_name(anchor.node) or "").startswith("self.")
                and dotted_name(move.func.value) != dotted_name(anchor.node)):
            return None
    if expression is None or expression.startswith(('"', "'")):
        return expression
    return expression if context.edits.name_bound_before(expression.split(".")[0], mismatch.node) else None


def _module_move_target(move: Optional[cst.CSTNode], context: RuleContext) -> Optional[str]:
    """`model.to(device)` -> `device`; `model.cuda()` -> `"cuda"` (the failing line runs only
    after that move succeeded, so CUDA is there)."""
    if not isinstance(move, cst.Call) or not isinstance(move.func, cst.Attribute):
        return None
    if move.func.attr.value == "cuda" and not move.args:
        return '"cuda"'
    if move.func.attr.value != "to" or len(move.args) != 1 or move.args[0].keyword is not None:
        return None
    target = move.args[0].value
    if isinstance(target, cst.SimpleString) or dotted_name(target) is not None:
        return context.module.code_for_node(target)
    return None


def _factory_device_fix(mismatch: DeviceMismatch, context: RuleContext) -> Optional[Fix]:
    """`torch.randn(n)` -> `torch.randn(n, device=h.device)`, when `h` exists where the factory runs."""
    factory, anchor = mismatch.offender.value.origin, mismatch.anchor
    if (mismatch.context != OPERATION or anchor.value.kind != TENSOR or not isinstance(factory, cst.Call)
            or not isinstance(anchor.node, (cst.Name, cst.Attribute)) or not takes_keyword(factory, "device")):
        return None
    root = dotted_name(anchor.node)
    if root is None or not context.edits.name_bound_before(root.split(".")[0], factory):
        return None
    device = f"{context.module.code_for_node(anchor.node)}.device"
    return Fix(SAFE, f"Create it on `{device}`", (context.edits.add_keyword(factory, "device", device),))


class DiscardedTensorMove(Rule):
    code = "DEV104"
    fixable = True
    fix_summary = 'assigns the result back: `x = x.to(device)` (safe)'
    name = "discarded-tensor-move"
    summary = "The result of a tensor's `.to()`/`.cuda()` is thrown away."
    why = """
`Module.to()` moves a module in place, but `Tensor.to()` and `Tensor.cuda()`
return a *new* tensor and leave the original where it was. A bare
`x.to(device)` statement does nothing, and the CPU tensor is used afterwards.
The same holds for a class of your own whose `to()` builds and returns a moved
copy (detectron2's `Instances.to`); one that moves its fields and returns
`self` is fine.
"""
    example = """
for x, y in loader:
    x.to(device)
    out = model(x)
"""
    use_instead = """
for x, y in loader:
    x = x.to(device)
    out = model(x)
"""
    invalid = ("""
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
x = torch.randn(3)
x.to(device)  # expect: DEV104
""",)
    valid = ("""
import torch
from torch import nn
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(3, 1)
model.to(device)
x = torch.randn(3).to(device)
""",)

    def check(self, facts: FileFacts, context: RuleContext) -> Iterator[Finding]:
        for move in facts.discarded_moves:
            if id(move.node) in facts.requirements.in_place_moves:
                continue  # a BatchEncoding: its `.to()` moves in place
            receiver = context.text_of(move.receiver.node)
            value = move.receiver.value
            if move.copy_of:
                yield Finding(move.node, (
                    f"the result of `{context.text_of(move.node)}` is discarded: `{move.copy_of}.{move.method}()` "
                    f"returns a moved copy and leaves `{receiver}` where it was; assign it: "
                    f"`{receiver} = {context.text_of(move.node)}`"), partial(_assign_move_fix, move, context))
                continue
            stays = f"stays on {context.where(value)}" if value.device.known else "stays where it was"
            yield Finding(move.node, (
                f"the result of `{context.text_of(move.node)}` is discarded: tensors are not moved in place, so "
                f"`{receiver}` {stays}; assign it: "
                f"`{receiver} = {context.text_of(move.node)}`"), partial(_assign_move_fix, move, context))


def _assign_move_fix(move: DiscardedMove, context: RuleContext) -> Optional[Fix]:
    """`x.to(device)` as a statement -> `x = x.to(device)`."""
    receiver = move.receiver.node
    statement = context.edits.statement(move.node)
    if (not isinstance(receiver, (cst.Name, cst.Attribute, cst.Subscript)) or statement is None
            or not isinstance(statement.body[0], cst.Expr) or statement.body[0].value is not move.node):
        return None
    target = context.module.code_for_node(receiver)
    return Fix(SAFE, f"Assign the moved tensor back to `{target}`", (context.edits.insert_before(move.node, f"{target} = "),))


class UnregisteredModuleState(Rule):
    code = "DEV105"
    fixable = True
    fix_summary = 'in `__init__`, `self.register_buffer("name", value, persistent=False)`; a python list/dict of modules becomes `nn.ModuleList`/`nn.ModuleDict` (unsafe: the tensor now follows `.half()` and shows in `buffers()`, the modules join `parameters()` and `state_dict()`)'
    name = "unregistered-module-state"
    summary = "Module state that `.to()` will not move: a plain tensor attribute, or a python list/dict of modules."
    why = """
`nn.Module.to()`, `.cuda()`, `state_dict()` and the optimizer only see
parameters, buffers and registered submodules. A tensor assigned as a plain
attribute stays on the CPU when the model moves, and modules kept in a python
list or dict are invisible: their weights stay on the CPU, are not trained by
an optimizer built from `model.parameters()`, and are not saved. (A CPU tensor
attribute is reported only when a method uses it with something that may live on
the module's device: constants used only for CPU bookkeeping are fine.)
"""
    example = """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = torch.ones(16)
        self.blocks = [nn.Linear(16, 16) for _ in range(4)]
"""
    use_instead = """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("scale", torch.ones(16))
        self.blocks = nn.ModuleList([nn.Linear(16, 16) for _ in range(4)])
"""
    invalid = ("""
import torch
from torch import nn
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = torch.ones(16)  # expect: DEV105
        self.blocks = [nn.Linear(16, 16) for _ in range(4)]  # expect: DEV105
    def forward(self, x):
        return x * self.scale
""",)
    valid = ("""
import torch
from torch import nn
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("scale", torch.ones(16))
        self.weight = nn.Parameter(torch.zeros(16))
        self.blocks = nn.ModuleList([nn.Linear(16, 16) for _ in range(4)])
        self.temperature = torch.tensor(0.5)
        self.sizes = torch.tensor([16, 32, 64])
    def forward(self, x):
        widths = self.sizes.tolist()
        return x * self.scale / self.temperature
""",)

    def check(self, facts: FileFacts, context: RuleContext) -> Iterator[Finding]:
        for state in facts.unregistered_state:
            attribute = f"`self.{state.attribute}`"
            if state.what == "tensor":
                message = (f"{attribute} is a plain tensor attribute of `{state.owner}`: it stays on "
                           f"{state.value.device.describe()} when the module moves and is not saved; "
                           f"register it with `self.register_buffer(\"{state.attribute}\", ...)` or `nn.Parameter`")
            elif state.what == "tensors":
                message = (f"{attribute} keeps tensors in a python {state.value.cls or 'list'}: they stay on "
                           f"{(state.value.items[0] if state.value.items else state.value).device.describe()} when `{state.owner}` moves and are not saved; "
                           f"register each as a buffer (`self.register_buffer(f\"{state.attribute}_{{i}}\", t)`)")
            else:
                kind = "Parameter" if state.parameters else "Module"
                holder = f"nn.{kind}Dict" if state.what == "dict" else f"nn.{kind}List"
                created = f" (created on line {context.line_of(state.container_origin)})" if state.container_origin is not None else ""
                message = (f"{attribute} keeps {kind.lower()}s in a python {state.what}{created}: `{state.owner}.to()` "
                           f"will not move them and `{state.owner}.parameters()` will not list them; use `{holder}`")
            yield Finding(state.node, message, partial(_register_fix, state, context))


def _register_fix(state: UnregisteredState, context: RuleContext) -> Optional[Fix]:
    if state.what == "tensor":
        return _buffer_fix(state, context)
    if state.what in ("list", "dict"):
        return _module_container_fix(state, context)
    return None


def _buffer_fix(state: UnregisteredState, context: RuleContext) -> Optional[Fix]:
    """`self.scale = torch.ones(4)` in `__init__` -> `self.register_buffer("scale", torch.ones(4), persistent=False)`.
    Unsafe: the tensor now follows `.half()`/`.to(dtype)` and shows in `buffers()`."""
    assign = state.node
    if not isinstance(assign, cst.Assign) or len(assign.targets) != 1:
        return None
    target = assign.targets[0].target
    function = context.edits.function(assign)
    if (function is None or function.name.value != "__init__" or not isinstance(target, cst.Attribute)
            or not isinstance(target.value, cst.Name) or context.edits.statement(assign) is None):
        return None
    owner, value = target.value.value, context.module.code_for_node(assign.value)
    call = f"{owner}.register_buffer(\"{state.attribute}\", {value}, persistent=False)"
    return Fix(UNSAFE, "Register it as a non-persistent buffer", (context.edits.replace(assign, call),))


def _module_container_fix(state: UnregisteredState, context: RuleContext) -> Optional[Fix]:
    """`[...]` -> `nn.ModuleList([...])`, `{"a": m}` -> `nn.ModuleDict({"a": m})`. Unsafe: new
    parameters join `parameters()` and `state_dict()`, and a few list/dict methods go away."""
    container = state.container_origin
    if container is None and isinstance(state.node, (cst.Assign, cst.AnnAssign)):
        container = state.node.value
    kind = "Parameter" if state.parameters else "Module"
    if state.what == "list" and isinstance(container, (cst.List, cst.ListComp)):
        holder = f"{kind}List"
    elif state.what == "dict" and isinstance(container, cst.Dict) and all(
            isinstance(element, cst.DictElement) and isinstance(element.key, cst.SimpleString)
            for element in container.elements):
        holder = f"{kind}Dict"
    else:
        return None
    nn, import_edit = context.edits.spell("torch.nn")
    empty = not getattr(container, "elements", True)
    text = f"{nn}.{holder}()" if empty else f"{nn}.{holder}({context.module.code_for_node(container)})"
    edits = (context.edits.replace(container, text),) + ((import_edit,) if import_edit else ())
    return Fix(UNSAFE, f"Keep the {kind.lower()}s in `{nn}.{holder}`", edits)


class AcceleratorTensorToHost(Rule):
    code = "DEV106"
    fixable = True
    fix_summary = 'copies to the host first: `t.detach().cpu().numpy()`, `np.array(t.detach().cpu())` (safe)'
    name = "accelerator-tensor-to-host"
    summary = "A tensor on an accelerator is handed to `.numpy()` or a host-only library."
    why = """
NumPy, scikit-learn, matplotlib, PIL and OpenCV only read host memory.
`t.numpy()` and `np.array(t)` raise "can't convert cuda:0 device type tensor to
numpy" for a tensor on the GPU, so code that works on a laptop fails on the
GPU machine.
"""
    example = """
preds = model(x.to(device)).argmax(1)
accuracy = (preds.numpy() == y.numpy()).mean()
"""
    use_instead = """
preds = model(x.to(device)).argmax(1)
accuracy = (preds.cpu().numpy() == y.numpy()).mean()
"""
    invalid = ("""
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
t = torch.randn(3, device=device)
values = t.numpy()  # expect: DEV106
""",)
    valid = ("""
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
t = torch.randn(3, device=device)
values = t.detach().cpu().numpy()
""",)

    def check(self, facts: FileFacts, context: RuleContext) -> Iterator[Finding]:
        for conversion in facts.host_conversions:
            yield Finding(conversion.node, (
                f"{context.operand(conversion.tensor)} is on {context.where(conversion.tensor.value)} and "
                f"`{conversion.api}` reads host memory only; call `.cpu()` first"), partial(_to_host_fix, conversion, context))


def _to_host_fix(conversion: HostConversion, context: RuleContext) -> Optional[Fix]:
    """`t.numpy()` -> `t.detach().cpu().numpy()`; `np.array(t)` -> `np.array(t.detach().cpu())`."""
    tensor = conversion.tensor.node
    if isinstance(tensor, cst.StarredElement):
        return None
    return Fix(SAFE, "Copy it to the host first (`.detach().cpu()`)", tuple(to_host(context, tensor)))


class UnmovedTokenizerOrCheckpoint(Rule):
    code = "DEV107"
    fixable = True
    fix_summary = 'moves the tokenizer output before the model uses it: `inputs = inputs.to(device)` (safe; tried after the other fixes)'
    fix_after_others = True
    name = "unmoved-tokenizer-or-checkpoint"
    summary = "Tokenizer output or a `torch.load` result stays on the CPU while the model is on an accelerator."
    why = """
A Hugging Face tokenizer returns CPU tensors, and `torch.load(...,
map_location="cpu")` returns CPU tensors, whatever device the model is on.
Feeding them to a model on the GPU fails; `.to(model.device)` is the usual
missing line.
"""
    example = """
model = AutoModelForCausalLM.from_pretrained(name).to("cuda")
inputs = tokenizer(prompt, return_tensors="pt")
output = model.generate(**inputs)
"""
    use_instead = """
model = AutoModelForCausalLM.from_pretrained(name).to("cuda")
inputs = tokenizer(prompt, return_tensors="pt").to(model.device)
output = model.generate(**inputs)
"""
    invalid = ("""
import torch
from transformers import AutoModel, AutoTokenizer
device = "cuda" if torch.cuda.is_available() else "cpu"
tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")
model = AutoModel.from_pretrained("bert-base-uncased").to(device)
inputs = tokenizer("hello", return_tensors="pt")
outputs = model(**inputs)  # expect: DEV107
""",)
    valid = ("""
import torch
from transformers import AutoModel, AutoTokenizer
device = "cuda" if torch.cuda.is_available() else "cpu"
tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")
model = AutoModel.from_pretrained("bert-base-uncased").to(device)
inputs = tokenizer("hello", return_tensors="pt").to(model.device)
outputs = model(**inputs)
""",)

    def check(self, facts: FileFacts, context: RuleContext) -> Iterator[Finding]:
        for mismatch in facts.mismatches:
            if not _is_late_input(mismatch):
                continue
            yield Finding(mismatch.node, (
                f"{context.operand(mismatch.offender)} is still on {context.where(mismatch.offender.value)} but "
                f"{context.operand(mismatch.anchor)} is on {context.where(mismatch.anchor.value)}; "
                f"move it with `.to(...)` first"), partial(_move_offender_fix, mismatch, context))


PLACEMENT_RULES = (
    ModelInputDeviceMismatch, OperandDeviceMismatch, FactoryMissingDevice, DiscardedTensorMove,
    UnregisteredModuleState, AcceleratorTensorToHost, UnmovedTokenizerOrCheckpoint,
)
