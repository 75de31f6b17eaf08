"""Python builtins, by name: what `len(x)`, `zip(a, b)`, `next(it)` or `dict(pairs)` give."""
from __future__ import annotations

from dataclasses import replace
from typing import Optional

import libcst as cst

from .. import torch_api as api
from ..call_args import caller_arg
from ..lattice import (
    ANY, BATCH, FUNCTION, HOST, LIST, METHOD, MODULE, OBJECT, OPTIMIZER, RANGE, REF, SOURCE_AVAILABILITY, TENSOR, TUPLE,
    UNKNOWN_VALUE, Source, Value, container_of, keyed_dict, surely_not_none)
from ..names import isinstance_types, string_value
from .registry import ApiCall, Registry

BUILTINS = Registry("builtins")

#: Builtins whose result is a plain Python value on the host.
HOST_BUILTINS = frozenset({"len", "int", "float", "bool", "str", "hasattr", "round", "abs", "repr", "format",
                           "id", "hash", "type", "print", "callable", "issubclass", "open"})


@BUILTINS.on("exit", "quit")
def exit_(call: ApiCall) -> Value:
    call.env.dead = True
    return Value(kind=HOST)


@BUILTINS.on(api.SYNC_BUILTINS)
def host_sync(call: ApiCall) -> None:
    """`float(loss)`, `print(t)`: the host waits for the tensor's value."""
    for arg in call.args if call.name == "print" else call.args[:1]:
        # (`print(*args)` in a logging helper: each value it was handed)
        values = arg.value.items if arg.node.star == "*" and arg.value.kind == TUPLE else (arg.value,)
        for value in values:
            call.ev.note_sync(arg.node.value, value, call.node, f"{call.name}()")


@BUILTINS.on("getattr")
def getattr_(call: ApiCall) -> Optional[Value]:
    args, first = call.args, call.first
    attribute = args[1].value.literal[0] if len(args) > 1 and args[1].value.literal is not None else None
    probe = len(args) == 3 and args[2].value.literal in ((None,), (False,), (True,))
    if isinstance(attribute, str) and first.kind == MODULE and len(args) in (2, 3) and not probe:
        # the same read as `model.device`, through a DataParallel/DDP wrapper perhaps (a fallback of
        # None or a flag asks whether it is there: `getattr(model, "config", None) or model.module.config`)
        call.ev.note_wrapper_attribute(first, attribute, call.node, args[0].node.value,
                                       args[2].node.value if len(args) == 3 else None)
    if len(args) == 3:  # `getattr(cfg, "device", "cuda")`: a settings lookup with a fallback
        call.ev.note_settings_default(string_value(args[1].node.value), args[2], "config default")
        if isinstance(attribute, str) and first.kind in (OBJECT, MODULE) and first.cls:
            # `getattr(model, "is_parallelizable", False)` on an object whose class sets it: that value
            found = call.ev.attribute_of(first, attribute, call.node, call.env)
            return found if found.kind != ANY or found.literal is not None else None
    if len(args) != 2:
        return None
    if isinstance(attribute, str) and first.kind in (OBJECT, MODULE, REF):
        # `getattr(callback, hook)` with the hook's name known here; `getattr(torch.optim, "Adam")`
        return call.ev.attribute_of(first, attribute, call.node, call.env)
    if attribute is None and first.kind == MODULE:
        # `getattr(model, name)` with the name read at run time: one of its parts, which moves with it
        return Value(kind=MODULE, device=first.device, origin=first.origin, owner=first.ident if first.ident is not None
                     else first.owner)
    if attribute is None and first.kind == REF and first.cls in api.CLASSES_PICKED_BY_NAME:
        return Value(kind=REF, cls=api.CLASSES_PICKED_BY_NAME[first.cls])  # one of them, by a name read at run time
    return None


@BUILTINS.on("isinstance")
def isinstance_(call: ApiCall) -> Value:
    """`isinstance(lengths, torch.Tensor)` on a value seen made as a tensor is decided: a branch that
    converts non-tensors does not run for it."""
    if (len(call.args) == 2 and call.first.kind == TENSOR and surely_not_none(call.first)
            and all(t in api.TENSOR_TYPES for t in isinstance_types(call.args[1].node.value))):
        return Value(kind=HOST, literal=(True,))
    if len(call.args) == 2 and surely_not_none(call.first) and any(
            call.first.kind == kind and bases.intersection(isinstance_types(call.args[1].node.value))
            for kind, bases in ((OPTIMIZER, api.OPTIMIZER_BASE_TYPES), (MODULE, api.MODULE_BASE_TYPES))):
        # an optimizer (a module) seen made is an instance of the base class: Lightning's
        # `init_optimizers` keeps the one `configure_optimizers()` returned
        return Value(kind=HOST, literal=(True,))
    if (len(call.args) == 2 and call.first.kind in (TUPLE, LIST) and surely_not_none(call.first)
            and all(t in api.TENSOR_TYPES for t in isinstance_types(call.args[1].node.value))):
        # a python tuple, list or dict is no tensor: `repackage_hidden(h)` takes the branch for containers
        return Value(kind=HOST, literal=(False,))
    if len(call.args) == 2 and call.first.kind == BATCH:
        return _mapping_instance_test(call, isinstance_types(call.args[1].node.value))
    return Value(kind=HOST)


def _mapping_instance_test(call: ApiCall, types) -> Value:
    """`isinstance(inputs, dict)` on a mapping built by a class of the file: true when the class
    extends `dict`, false when it wraps one (`class BatchEncoding(UserDict)`), so a helper that
    moves dicts passes it by as it is."""
    info = call.ev.program.classes.get(call.first.cls) if call.first.cls else None
    if info is None or not info.mapping:
        return Value(kind=HOST)
    if all(t == "dict" for t in types):
        return Value(kind=HOST, literal=(info.is_dict,))
    if all(t in api.MAPPING_ABCS or t == "Mapping" for t in types):
        return Value(kind=HOST, literal=(True,))
    return Value(kind=HOST)


@BUILTINS.on(HOST_BUILTINS)
def host_value(call: ApiCall) -> Value:
    return Value(kind=HOST)


@BUILTINS.on("sum", "min", "max")
def fold(call: ApiCall) -> Optional[Value]:
    """`sum(weights)` of numbers is a number (of tensors, a tensor: not answered here)."""
    if not call.args or call.args[0].node.star:
        return None
    values = [call.ev.element_of(call.first, call.args[0].node.value, call.node)] if len(call.args) == 1 else \
        [a.value for a in call.args if a.keyword is None]
    positional = [a for a in call.args if a.keyword is None]
    if call.name != "sum" and len(positional) > 1 and any(a.value.kind == TENSOR for a in positional):
        # `max(num_pos, 1.0)` compares a tensor with a number: `bool()` of the comparison waits for
        # the tensor's value (mmdetection's normaliser, now `clamp_(min=1.0)`)
        for arg in positional:
            if arg.value.kind == TENSOR:
                call.ev.note_sync(arg.node.value, arg.value, call.node, f"{call.name}()")
    if call.name == "sum" and len(call.args) == 1 and values[0].kind == TENSOR and values[0].device.known:
        # `sum(loss_dict.values())`: 0 plus each tensor, a tensor where they are
        element = values[0]
        return Value(kind=TENSOR, device=element.device, origin=element.origin, via=element.via, scalar=element.scalar)
    return Value(kind=HOST) if all(v.kind == HOST for v in values) else None


@BUILTINS.on("range")
def range_(call: ApiCall) -> Value:
    """Numbers; `range(n)` counts from 0 (GPU indices made from it start at GPU 0)."""
    # (`range(torch.cuda.device_count())` is empty without a GPU: a loop over it is a guard)
    source = SOURCE_AVAILABILITY if any(arg.value.source == SOURCE_AVAILABILITY for arg in call.args) else Source.NONE
    if len(call.args) == 1 and not call.args[0].node.star:
        return Value(kind=LIST, cls=RANGE, items=(Value(kind=HOST, cls=RANGE),), source=source)
    return Value(kind=LIST, items=(Value(kind=HOST),), source=source)


def _element(call: ApiCall, index: int) -> Value:
    arg = call.args[index]
    return call.ev.element_of(arg.value, arg.node.value, arg.node.value)


@BUILTINS.on("enumerate")
def enumerate_(call: ApiCall) -> Value:
    element = _element(call, 0) if call.args else call.ev.element_of(UNKNOWN_VALUE, call.node, call.node)
    return Value(kind=LIST, items=(Value(kind=TUPLE, items=(Value(kind=HOST), element)),))


@BUILTINS.on("zip")
def zip_(call: ApiCall) -> Value:
    items = tuple(_element(call, index) for index in range(len(call.args)))
    return Value(kind=LIST, items=(Value(kind=TUPLE, items=items),))


@BUILTINS.on(api.PASS_THROUGH_ITERATORS)
def same_items(call: ApiCall) -> Value:
    """`list(xs)`, `sorted(xs)`, `iter(xs)`: the same elements."""
    first = call.first
    if call.name in _SEQUENCE_BUILDERS and call.args and first.kind in (ANY, HOST):
        # (whatever went in, a Python list or tuple comes out: `torch.tensor(list(size))` has a
        # dimension, so it is no 0-dim scalar that may meet a GPU tensor)
        return Value(kind=LIST, cls=call.name, items=(_element(call, 0),), source=first.source)
    return first


#: Builtins that always give a new Python list or tuple.
_SEQUENCE_BUILDERS = frozenset({"list", "tuple", "sorted"})


@BUILTINS.on("filter")
def filter_(call: ApiCall) -> Optional[Value]:
    """`filter(lambda p: p.grad is not None, params)`: some of the same elements."""
    args = call.args
    if len(args) != 2 or any(a.keyword is not None or a.node.star for a in args):
        return None
    return args[1].value


@BUILTINS.on("map")
def map_(call: ApiCall) -> Optional[Value]:
    """`map(self.to_torch, arrays)` with a function or method of the project: what it returns for
    an element, for each element."""
    args = call.args
    if len(args) != 2 or any(a.keyword is not None or a.node.star for a in args) \
            or call.first.kind not in (FUNCTION, METHOD):
        return None
    iterable = args[1]
    element = call.ev.element_of(iterable.value, iterable.node.value, call.node, call.env)
    result = call.ev.call_bound(call.first, args[0].node.value, call.node, [caller_arg(element)], call.env)
    return container_of([result], "list")


@BUILTINS.on("next")
def next_(call: ApiCall) -> Value:
    first_node = call.args[0].node.value if call.args else call.node
    return call.ev.element_of(call.first, first_node, call.node)


@BUILTINS.on("dict")
def dict_(call: ApiCall) -> Value:
    """`dict()`, a copy of a dict, or `dict(model.named_parameters())`: a dict of the pairs' values."""
    args, first = call.args, call.first
    if not args:
        return Value(kind=LIST, cls="dict", origin=call.node)
    if all(a.keyword is not None for a in args):  # `dict(input_ids=ids, attention_mask=mask)`
        for arg in args:  # settings: nanoGPT's `config = dict(device="cuda", ...)`
            if isinstance(arg.node.value, (cst.SimpleString, cst.ConcatenatedString)):
                call.ev.note_settings_default(arg.keyword, arg, "config default")
        return keyed_dict(tuple((a.keyword, a.value) for a in args), call.node)
    if len(args) == 1 and args[0].keyword is None and not args[0].node.star:
        if first.kind == BATCH or (first.kind == LIST and first.cls == "dict"):  # a copy of a dict: its values
            return replace(first, keyed=())
        pair = call.ev.element_of(first, args[0].node.value, call.node)
        if pair.kind == TUPLE and len(pair.items) == 2:
            return replace(container_of([pair.items[1]], "dict"), origin=call.node)
    return UNKNOWN_VALUE
