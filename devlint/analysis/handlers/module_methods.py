"""Methods of `nn.Module` objects, by method name (a module's own methods are read, not looked up)."""
from __future__ import annotations

from typing import Optional

from .. import torch_api as api
from ..lattice import HOST, LIST, MODULE, TENSOR, TUPLE, UNKNOWN, UNKNOWN_VALUE, Value
from ..names import dotted_name
from ..state_dicts import note_prefix_mismatch, state_dict_of
from .registry import ApiCall, Registry

MODULE_METHODS = Registry("module methods")

#: Methods that give the module itself back, where it is.
SAME_MODULE_METHODS = frozenset({"half", "float", "double", "bfloat16", "train", "eval", "requires_grad_", "share_memory",
                                 "zero_grad"})
#: Methods that run the model on their arguments.
MODEL_CALL_METHODS = frozenset({"forward", "generate", "__call__"})
_PARTS = frozenset({"parameters", "buffers", "named_parameters", "named_buffers", "children", "modules",
                    "named_children", "named_modules"})


@MODULE_METHODS.on(api.OFFLOAD_METHODS, api.FORWARD_HOOK_REGISTRATIONS)
def offload(call: ApiCall) -> Value:
    """Hooks move the weights at call time (offloading): where the module, and the model it is part
    of, is, is unknown from here on."""
    receiver, env = call.receiver, call.env
    for ident in ({receiver.ident, receiver.owner} | set(receiver.aliases)) - {None}:
        call.ev.note_moved(ident, receiver.with_device(UNKNOWN), env)
    key = dotted_name(call.receiver_node)
    if key is not None:
        env.values[key] = receiver.with_device(UNKNOWN)
    return UNKNOWN_VALUE


@MODULE_METHODS.on(MODEL_CALL_METHODS)
def model_call(call: ApiCall) -> Optional[Value]:
    """`model.generate(x)`, `model.forward(x)`: the model runs on x. A `generate` or `__call__` the
    file writes itself is read like any method (it may move its input); `forward` is entered by
    the model call, which checks the input first."""
    if call.name != "forward" and call.ev.program.defines(call.receiver.cls, call.name):
        return None
    operation = "call" if call.name == "__call__" else call.name
    result = call.ev.module_call(call.receiver, call.receiver_node, call.node, call.args, operation, call.env)
    return model_call_result(call.receiver, call.name, result)


def model_call_result(receiver: Value, name: str, result: Value) -> Value:
    """Only a Hugging Face model's `generate` is known to give token ids on its device; another
    class's (a vocoder's sampler in another file) may return a numpy waveform. Its inputs are
    checked all the same; what it returns is unknown."""
    if name == "generate" and receiver.cls != api.PRETRAINED_MODEL:
        return UNKNOWN_VALUE
    return result


@MODULE_METHODS.on(SAME_MODULE_METHODS)
def same_module(call: ApiCall) -> Value:
    return call.receiver


@MODULE_METHODS.on(_PARTS)
def parts(call: ApiCall) -> Value:
    """`model.parameters()`, `model.named_children()`: parts that belong to the module and move with it."""
    receiver, name = call.receiver, call.name
    if name.endswith(("children", "modules")):  # submodules: part of the receiver (`owner`)
        element = Value(kind=MODULE, device=receiver.device, origin=receiver.origin, via=receiver.via,
                        owner=receiver.ident if receiver.ident is not None else receiver.owner)
    else:  # a parameter knows its module: it moves with it, and so does an optimizer built on it
        # (weights of `torch.nn` layers have a shape: a 0-dim one is a `Parameter(...)` written out)
        shaped = False if call.ev.program.parameters_shaped and receiver.cls else None
        element = Value(kind=TENSOR, device=receiver.device, origin=receiver.origin, via=receiver.via, parameter=True,
                        owner=receiver.ident, scalar=shaped)
    if name.startswith("named_"):
        element = Value(kind=TUPLE, items=(Value(kind=HOST), element))
    return Value(kind=LIST, items=(element,))


@MODULE_METHODS.on("get_submodule")
def submodule(call: ApiCall) -> Value:
    """`model.get_submodule("layers.3")`: a part of the model, which moves with it (and which may be
    moved on its own, leaving the model partly elsewhere)."""
    receiver = call.receiver
    return Value(kind=MODULE, device=receiver.device, origin=receiver.origin, via=receiver.via,
                 owner=receiver.ident if receiver.ident is not None else receiver.owner)


@MODULE_METHODS.on("register_buffer")
def register_buffer(call: ApiCall) -> Optional[Value]:
    if len(call.args) < 2:
        return None
    call.ev.program.note_buffer(call.ev, call.args[0].node.value, call.args[1].value, call.env)
    return Value(kind=HOST)


@MODULE_METHODS.on("state_dict")
def state_dict(call: ApiCall) -> Optional[Value]:
    """`model.state_dict()`: the module's tensors by name, where the module is; a wrapper's names
    start with `module.`."""
    program = call.ev.program
    if program.defines(call.receiver.cls, "state_dict"):
        return None
    return state_dict_of(call.receiver, call.node, program.contexts.heap, program.parameters_shaped)


@MODULE_METHODS.on("load_state_dict")
def load_state_dict(call: ApiCall) -> Optional[Value]:
    """`model.load_state_dict(sd)`: strict loading fails when one side's names carry DataParallel/DDP's
    `module.` prefix and the other's do not."""
    if not call.ev.program.defines(call.receiver.cls, "load_state_dict") and call.args:
        note_prefix_mismatch(call)
    return None
