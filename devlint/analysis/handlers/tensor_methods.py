"""Methods of tensors (and of batches seen as tensors), by method name.

`TENSOR_METHODS` answers `x.<name>(...)` once the interpreter knows `x` is a
tensor: whether it moves, syncs with the host, leaves the device, computes with
another tensor, or is the same tensor again.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Optional

import libcst as cst

from .. import torch_api as api
from ..facts import UNGUARDED_CUDA_API, DiscardedMove, Operand
from ..lattice import (
    BATCH, HOST, PROCESS_START_GPU, REF, SOURCE_FACTORY, SOURCE_LOADER, SOURCE_TYPE_NAME, TENSOR, UNKNOWN, Value, literal_of, same_placement,
)
from ..names import last_identifier
from .registry import ApiCall, Registry

TENSOR_METHODS = Registry("tensor methods")


@TENSOR_METHODS.on(api.MOVE_METHODS - {"to_empty"})
def move(call: ApiCall) -> Value:
    """`x.to(device)`, `x.cuda()`, `x.cpu()`: a copy where it is sent (the receiver does not move)."""
    ev, receiver, node = call.ev, call.receiver, call.node
    target = ev.move_target(call.name, node, call.args, call.env)
    if call.name == "cpu":
        ev.note_sync(call.receiver_node, receiver, node, ".cpu()")
    # (a discarded move to where the tensor already is, `x = x.to("cuda"); x.to("cuda")`, changes nothing)
    if call.discarded and ev.recording and receiver.kind == TENSOR and target is not None \
            and not same_placement(receiver.device, target):
        ev.program.facts.discarded_moves.append(DiscardedMove(node, Operand(call.receiver_node, receiver), call.name))
    if target is None:
        return receiver
    ev.note_tensor_move(call.receiver_node, receiver, node, target, call.args)
    return Value(kind=receiver.kind, device=target, origin=node, scalar=receiver.scalar)


@TENSOR_METHODS.on(api.SYNC_METHODS)
def host_sync(call: ApiCall) -> None:
    """`.item()`, `.tolist()`...: the host waits for the device."""
    call.ev.note_sync(call.receiver_node, call.receiver, call.node, f".{call.name}()")


@TENSOR_METHODS.on(api.TO_NUMPY_METHODS)
def to_numpy(call: ApiCall) -> Value:
    """`.numpy()`: host data, which an accelerator tensor cannot give without `.cpu()` first."""
    receiver = call.receiver
    call.ev.check_host_conversion(call.receiver_node, receiver, call.node, f".{call.name}()", call.env)
    return Value(kind=HOST, source=SOURCE_LOADER if receiver.source == SOURCE_LOADER else "",
                 origin=receiver.origin, via=receiver.via)


@TENSOR_METHODS.on(api.CUDA_ONLY_TENSOR_METHODS)
def needs_accelerator(call: ApiCall) -> None:
    """`x.pin_memory()` raises where there is no GPU, unless guarded. A batch class's own
    `pin_memory()` is what a DataLoader calls when it was asked to pin: the request is there."""
    if not call.env.guarded and call.ev.scope.method != call.name and not call.ev.pinning_asked:
        call.ev.record_misuse(call.node, UNGUARDED_CUDA_API, f"Tensor.{call.name}")
        call.ev.unguarded_cuda_calls.append(call.node)


@TENSOR_METHODS.on(api.HOST_RESULT_METHODS)
def host_result(call: ApiCall) -> Value:
    return Value(kind=HOST)


@TENSOR_METHODS.on(api.NEW_METHODS)
def new_tensor(call: ApiCall) -> Value:
    """`x.new_zeros(n)`: on x's device unless told otherwise."""
    device_kw = call.keyword("device")
    device = call.receiver.device
    if device_kw is not None:
        device = call.ev.device_argument(device_kw.node.value, device_kw.value, call.env) or UNKNOWN
    return Value(kind=TENSOR, device=device, origin=call.node, source=SOURCE_FACTORY, scalar=False, explicit_device=True)


@TENSOR_METHODS.on("type")
def type_(call: ApiCall) -> Optional[Value]:
    """`x.type()` names x's type (and so its device); `x.type(T)` converts x, to T's device when T names one."""
    receiver, args, node = call.receiver, call.args, call.node
    if not args:
        return Value(kind=HOST, device=receiver.device, source=SOURCE_TYPE_NAME)
    given = args[0].value
    if given.source == SOURCE_TYPE_NAME:  # `eye.type(f_cov.type())`
        # a type name says "cuda", not which GPU: the result is on the current GPU, which is the
        # named tensor's only where that tensor's GPU was not written out (`cuda:1` is not it)
        device = given.device
        if device.is_accelerator and device.index is not None:
            current = (call.env.current_gpu or PROCESS_START_GPU).device
            device = replace(device, index=current.index, key=current.key)
        return Value(kind=TENSOR, device=device, origin=node, scalar=receiver.scalar)
    if given.kind == REF:  # `x.type(torch.cuda.FloatTensor)` moves too
        device = api.tensor_type_device(given.cls) or (receiver.device if api.is_dtype(given.cls) else UNKNOWN)
        return Value(kind=TENSOR, device=device, origin=node if device != receiver.device else receiver.origin,
                     source=receiver.source if device == receiver.device else "", scalar=receiver.scalar)
    named = literal_of(given)
    if isinstance(named, str):  # `x.type("torch.cuda.FloatTensor")`
        device = api.tensor_type_device(named) or receiver.device
        return Value(kind=TENSOR, device=device, origin=node, scalar=receiver.scalar)
    if api.is_dtype_name(last_identifier(args[0].node.value)):  # `x.type(self.dtype)`: a cast, in place
        return None
    # `pad.type(input.type())` of an input we know nothing of: wherever that input is
    return Value(kind=TENSOR, device=UNKNOWN, origin=node, scalar=receiver.scalar)


def computed_on(receiver: Value, scalar: Optional[bool] = None) -> Value:
    """What a method that computes on the receiver gives: a tensor where it is (a view or a
    conversion of host data copied here is still that copy: `torch.from_numpy(a).float().to(device)`)."""
    return Value(kind=TENSOR, device=receiver.device, origin=receiver.origin, via=receiver.via, source=receiver.source,
                 stored=receiver.stored, scalar=receiver.scalar if scalar is None else scalar, parameter=False,
                 host_copy=receiver.host_copy, explicit_device=receiver.explicit_device)


@TENSOR_METHODS.on(api.DIMENSION_ADDING_METHODS)
def adds_dimensions(call: ApiCall) -> Value:
    """`t.unsqueeze(0)`, `t.expand(s.shape)`, `t.expand_as(s)`: the result has a dimension (as many
    as `s` has), so a 0-dim tensor passed through is a shaped one, which may not meet another GPU."""
    shaped = None
    if call.name == "unsqueeze":
        shaped = False
    elif call.name == "expand_as" and call.args:
        shaped = call.first.scalar
    elif call.name == "expand" and len(call.args) == 1 and isinstance(call.args[0].node.value, cst.Attribute) \
            and call.args[0].node.value.attr.value == "shape":
        # (`t.expand(s.shape)`: s's shape, when s is a tensor known to have one)
        shaped = call.ev.eval(call.args[0].node.value.value, call.env).scalar
    return computed_on(call.receiver, scalar=shaped if shaped is False else None)


@TENSOR_METHODS.on("type_as")
def type_as(call: ApiCall) -> Optional[Value]:
    """`x.type_as(y)` is on y's device."""
    if not call.args:
        return None
    return Value(kind=TENSOR, device=call.first.device, origin=call.node, scalar=call.receiver.scalar)


@TENSOR_METHODS.on(api.OPERAND_METHODS)
def operation(call: ApiCall) -> Value:
    """`x.add(y)`, `x.matmul(y)`...: x and y must share a device."""
    operands = [(call.receiver_node, call.receiver)] + call.ev.operands_of(call.args)
    result = call.ev.check_operands(call.node, operands, f".{call.name}()",
                                    arithmetic=call.name in api.ARITHMETIC_METHODS)
    if call.name in api.SPLITTING_METHODS or call.name in api.REDUCTIONS:
        return replace(result, scalar=None)
    return result


@TENSOR_METHODS.on(api.SPLITTING_METHODS)
def split(call: ApiCall) -> Optional[Value]:
    """`x.split(n)`, `x.chunk(k)`: pieces of x, where x is."""
    receiver = call.receiver
    if not call.args:
        return None
    return Value(kind=BATCH, device=receiver.device, origin=receiver.origin, via=receiver.via, source=receiver.source,
                 stored=receiver.stored)


@TENSOR_METHODS.on(api.REDUCTIONS, api.SPLITTING_METHODS)
def reduction(call: ApiCall) -> Value:
    """`x.sum()`, `x.max()`: a tensor of unknown shape where x is."""
    receiver = call.receiver
    return Value(kind=TENSOR, device=receiver.device, origin=receiver.origin, via=receiver.via, source=receiver.source,
                 stored=receiver.stored, scalar=None)


@TENSOR_METHODS.on(api.PAIRED_ARGUMENT_METHODS)
def paired_argument(call: ApiCall) -> None:
    """`out.backward(gradient=seed)`: the gradient lives where out is."""
    keyword = api.PAIRED_ARGUMENT_METHODS[call.name]
    paired = call.keyword(keyword)
    if paired is None and call.args and call.args[0].keyword is None:
        paired = call.args[0]
    if paired is not None:
        call.ev.check_operands(call.node, [(call.receiver_node, call.receiver), (paired.node.value, paired.value)],
                               f".{call.name}()", arithmetic=False)


@TENSOR_METHODS.on("backward")
def backward(call: ApiCall) -> Value:
    call.ev.note_step(trains=True)
    return Value(kind=HOST)


@TENSOR_METHODS.when(api.is_in_place_method)
def in_place(call: ApiCall) -> Value:
    """`torch.empty(n).zero_()` is that CPU tensor."""
    return call.receiver


@TENSOR_METHODS.on(api.NOT_IN_PLACE)
def no_tensor(call: ApiCall) -> Value:
    return Value(kind=HOST)
