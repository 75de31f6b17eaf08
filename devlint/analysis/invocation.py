"""Calls of the file's own functions, interpreted in the caller's context.

At a call of a user function, method, constructor or `forward`, the callee's
parameters are bound to the caller's argument values (positional, keyword,
defaults, `*args`/`**kwargs`, the receiver), its body is interpreted on that
binding, and what it did is brought back: its result, the objects it moved in
place, the fields it set on its receiver, whether it started CUDA.

Each (callee, abstract binding, caller state) is interpreted once and
memoised; a function gets at most `MAX_CONTEXTS` contexts and a file a total
work budget, after which calls fall back to the callee's generic summary (the
one it gets with symbolic parameters, which is also what functions no entry
point reaches are analysed with).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import AbstractSet, Callable, Dict, List, Optional, Sequence, Tuple

import libcst as cst

from .lattice import BATCH, LIST, TENSOR, TUPLE, UNKNOWN_VALUE, CurrentGpu, Value, container_of, join_values

#: Contexts one function may be interpreted in before calls use its generic summary.
MAX_CONTEXTS = 8
#: How deep calls in context may nest.
MAX_DEPTH = 12
#: How often one function may be on the call stack, each time in another context (recursion on parts).
MAX_RECURSION = 3


@dataclass(frozen=True)
class Invocation:
    """What a call in context brings back to its caller."""

    result: Value
    #: in-place moves of objects the caller can see: (allocation site, the value after the move, weak)
    moved: Tuple[Tuple[int, Value, bool], ...] = ()
    #: fields the callee set on objects: (allocation site, field, value)
    fields: Tuple[Tuple[int, str, Value], ...] = ()
    #: the statement that started CUDA inside the callee, if it did
    cuda_initialised: Optional[cst.CSTNode] = None
    #: the callee called a model / trained one: a loop calling it steps one
    steps: bool = False
    trains: bool = False
    encloses: bool = False
    #: the callee made another GPU current (`torch.cuda.set_device(1)` in a config's `__post_init__`)
    sets_gpu: bool = False
    current_gpu: Optional[CurrentGpu] = None


@dataclass
class CallSite:
    """The call as the caller sees it: the argument values and the caller's state that matter."""

    node: cst.Call
    positional: List[Value]
    keywords: Dict[str, Value]
    star: bool = False            # `f(*xs)`: positions are unknown from there on
    double_star: bool = False     # `f(**kw)`: keywords are unknown
    guarded: bool = False
    heat: str = ""
    recording: bool = True
    default_device: object = None
    from_module_level: bool = False  # the caller is the module's own code (an entry point)
    cpu_path: bool = False  # the caller's code (or one of its callers) can run without CUDA
    building: bool = False  # a method of the module under construction, called from its `__init__`
    current_gpu: Optional[CurrentGpu] = None  # the caller's current GPU (`torch.cuda.set_device`)
    #: the calls the caller evaluated in its step so far: a tensor one of them made, handed to the
    #: callee (a kernel built by a sibling helper), was made this step too
    made_in_step: Tuple[AbstractSet[int], ...] = ()
    #: `f(**batch)` of a dict whose keys are unknown but whose values are all alike (`{k: v.to(dev)
    #: for k, v in batch.items()}`): that value, for each parameter the dict may fill
    spread: Optional[Value] = None


def bind_parameters(params: cst.Parameters, site: CallSite, receiver: Optional[Value],
                    default_of: Callable[[cst.Param], Value]) -> Dict[str, Value]:
    """Parameter name -> value for one call, as Python binds them.

    `receiver` is bound to the first positional parameter (`self`); a parameter the call leaves
    out gets its default's value (`default_of`), `*args` a list of the extra positional values,
    `**kwargs` a dict of the extra keywords. Whatever the call cannot tell is unknown.
    """
    positional_params: List[cst.Param] = list(params.posonly_params) + list(params.params)
    arguments = list(site.positional)
    if receiver is not None:
        arguments.insert(0, receiver)
    bound: Dict[str, Value] = {}
    for index, param in enumerate(positional_params):
        name = param.name.value
        if index < len(arguments):
            bound[name] = arguments[index]
        elif name in site.keywords:
            bound[name] = site.keywords[name]
        elif site.star or site.double_star:
            bound[name] = _spread_into(param, site, default_of)
        elif param.default is not None:
            bound[name] = default_of(param)
        else:
            bound[name] = UNKNOWN_VALUE
    for param in params.kwonly_params:
        name = param.name.value
        if name in site.keywords:
            bound[name] = site.keywords[name]
        elif param.default is not None and not site.double_star:
            bound[name] = default_of(param)
        else:
            bound[name] = _spread_into(param, site, default_of)
    if isinstance(params.star_arg, cst.Param):
        extra = arguments[len(positional_params):]
        bound[params.star_arg.name.value] = (
            UNKNOWN_VALUE if site.star else Value(kind=TUPLE, items=tuple(extra)))
    if params.star_kwarg is not None:
        named = {p.name.value for p in positional_params} | {p.name.value for p in params.kwonly_params}
        extra_keywords = [value for key, value in site.keywords.items() if key not in named]
        if site.double_star and site.spread is not None:
            extra_keywords.append(site.spread)  # `f(loss=l, **losses)` of a dict of tensors: one more of them
        bound[params.star_kwarg.name.value] = (
            UNKNOWN_VALUE if site.double_star and site.spread is None
            else container_of(extra_keywords, "dict") if extra_keywords else Value(kind=LIST, cls="dict"))
    return bound


def _spread_into(param: cst.Param, site: CallSite, default_of: Callable[[cst.Param], Value]) -> Value:
    """A parameter `**batch` may fill: the dict's value, or its default where the key is absent."""
    if site.spread is None or site.star:
        return UNKNOWN_VALUE
    return site.spread if param.default is None else join_values(site.spread, default_of(param))


def spread_element(value: Value) -> Optional[Value]:
    """The value every key of a dict of unknown keys holds, when the analysis knows it."""
    if value.kind == BATCH and value.device.known:
        return Value(kind=TENSOR, device=value.device, origin=value.origin, source=value.source)
    if value.kind == LIST and value.cls == "dict" and value.items and value.items[0].kind == TENSOR:
        return value.items[0]
    return None


def abstract(value: Value) -> tuple:
    """What of a value decides how a callee behaves: kind, device, class, identity, literal.

    Origins are left out on purpose: two calls with CPU tensors made on different lines are one
    context (the first one's origins name the findings).
    """
    items = tuple(abstract(item) for item in value.items[:4]) if value.kind in (TUPLE, LIST) else ()
    return (value.kind, value.device, value.cls, value.ident, value.scalar, value.source, value.literal,
            value.scatters, value.parameter, value.stateful, items)


def context_key(function: cst.FunctionDef, bound: Dict[str, Value], site: CallSite) -> tuple:
    return (id(function), tuple((name, abstract(value)) for name, value in bound.items()),
            site.guarded, site.heat, site.recording, site.default_device, site.cpu_path, site.building,
            site.current_gpu)


def set_fields(receiver_name: str, seeded: Dict[str, Value], final: Dict[str, Value]) -> Dict[str, Value]:
    """Fields (`self.x`) the callee assigned or changed, by field name."""
    prefix = receiver_name + "."
    changed = {}
    for key, value in final.items():
        if key.startswith(prefix) and key.count(".") == 1 and seeded.get(key) != value:
            changed[key[len(prefix):]] = value
    return changed


def site_from(node: cst.Call, args: Sequence, guarded: bool, heat: str, recording: bool, default_device) -> CallSite:
    """A `CallSite` from the evaluated arguments of a call (`Arg` records of `calls.py`)."""
    positional, keywords = [], {}
    star = double_star = False
    spread: Optional[Value] = None
    for arg in args:
        if arg.node.star == "*":
            if not star and arg.value.kind == TUPLE and arg.value.cls != "list" and arg.value.items:
                positional.extend(arg.value.items)  # `f(self, *args)` of a tuple whose items are known
            else:
                star = True
        elif arg.node.star == "**":
            if arg.value.keyed and all(isinstance(key, str) for key, _ in arg.value.keyed):
                keywords.update(arg.value.keyed)  # `model.generate(**inputs)` of a dict whose keys are known
            else:
                double_star = True
                spread = spread_element(arg.value) if spread is None else UNKNOWN_VALUE
        elif arg.keyword is not None:
            keywords[arg.keyword] = arg.value
        elif not star:
            positional.append(arg.value)
    if spread is not None and spread.kind != TENSOR:  # (two `**` dicts: not one value)
        spread = None
    return CallSite(node, positional, keywords, star, double_star, guarded, heat, recording, default_device,
                    spread=spread)

