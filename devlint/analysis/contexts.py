"""Running a function of the file in the context of one call.

`ContextRunner.invoke` binds the call's arguments (and receiver) to the
callee's parameters, interprets the body on that binding with the caller's
guard, heat, default device and recording state, and returns an
`Invocation`: the result and the effects the caller must see. Results are
memoised per abstract context (see `invocation.py`); a function past its
context cap, a recursive call or a file past its work budget gets `None`,
and the caller falls back to the callee's generic summary.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Dict, List, Optional, Set

import libcst as cst

from . import torch_api as api
from .declarations import FunctionInfo, ProgramServices
from .env import Env
from .facts import fact_counts, note_callers
from .heap import Heap, function_key
from .interpreter import Interpreter, Scope
from .invocation import (
    MAX_CONTEXTS, MAX_DEPTH, MAX_RECURSION, CallSite, Invocation, abstract, bind_parameters, context_key, set_fields,
)
from .lattice import (
    ANY, CLASS, DEVICE, FUNCTION, HOST, LIST, MODULE, OBJECT, OPTIMIZER, TENSOR, UNGUARDED, UNKNOWN_VALUE, Value, gpu_at_exit, join_all,
    join_paths,
)
from .rebound_fields import as_seen_unseeded
from .names import dotted_name, string_value
from .value_queries import host_data


#: Statements interpreted per byte of source before calls stop being entered in context.
WORK_PER_BYTE = 4
MIN_WORK = 20_000


class ContextRunner:
    def __init__(self, program: ProgramServices, source_size: int) -> None:
        self.program = program
        self.heap = Heap()
        self.memo: Dict[tuple, Invocation] = {}
        #: per function, the contexts it ran in with object identities left out
        self.shapes: Dict[int, Set[tuple]] = {}
        self.stack: List[int] = []
        #: the contexts being interpreted now (a recursive call in one of them is not entered)
        self.running: Set[tuple] = set()
        #: functions interpreted in at least one recording context
        self.reached: Set[int] = set()
        self.budget = max(MIN_WORK, WORK_PER_BYTE * source_size)
        self.work = 0

    def spend(self) -> None:
        self.work += 1

    @property
    def exhausted(self) -> bool:
        return self.work > self.budget

    # --- the call ---------------------------------------------------------------

    def invoke(self, info: FunctionInfo, receiver: Optional[Value], site: CallSite,
               caller: Interpreter, caller_env: Env) -> Optional[Invocation]:
        node_id = id(info.node)
        if self.stack.count(node_id) >= MAX_RECURSION or len(self.stack) >= MAX_DEPTH or self.exhausted:
            return None
        bound = bind_parameters(info.node.params, site, receiver, lambda p: self.default_value(info, p, site))
        if receiver is not None and info.is_static:
            bound = bind_parameters(info.node.params, site, None, lambda p: self.default_value(info, p, site))
            receiver = None
        site.from_module_level = caller.scope.owner is None and not caller.scope.method
        view = _receiver_view(site.node, receiver, caller_env)
        key = context_key(info.node, bound, site) + tuple((field, abstract(value)) for field, value in view.items()) \
            + self._placed_fields(receiver)
        if key in self.running:
            # a recursive call on what the outer call already has (no fixpoint is sought): unknown; one
            # on a part of it (`tuple(repackage(v) for v in h)` for a tuple `h`) runs on that part
            return None
        done = self.memo.get(key)
        clock, loads = self.heap.clock, len(self.heap.optimizer_state)
        if done is None:
            # The cap counts what the arguments are, not which object the method runs on: twelve
            # tests calling `self._get_data(cuda=False)` are one context (each still runs on its own
            # receiver, within the file's work budget).
            shapes = self.shapes.setdefault(node_id, set())
            shape = context_key(info.node, {name: _anonymous(value) for name, value in bound.items()}, site)
            if shape not in shapes and len(shapes) >= MAX_CONTEXTS:
                return None
            shapes.add(shape)
            self.stack.append(node_id)
            self.running.add(key)
            try:
                done = self._run(info, receiver, bound, site, view)
            finally:
                self.stack.pop()
                self.running.discard(key)
            self.memo[key] = done
            if site.recording:
                self.reached.add(node_id)
        self._apply(done, caller, caller_env, site.node, clock, constructor=info.name == "__init__")
        if len(self.heap.optimizer_state) > loads:
            handed = {id(value.origin) for value in list(site.positional) + list(site.keywords.values())
                      if value.kind == OPTIMIZER and value.origin is not None}
            self.heap.note_state_loads_returned(loads, site.node, function_key(caller.scope.node), handed)
        result = self._made_for_this_call(done.result, info, site, caller)
        return replace(done, result=_returned_through(result, site, bound))

    def _made_for_this_call(self, result: Value, info: FunctionInfo, site: CallSite, caller: Interpreter) -> Value:
        """A module or object the callee made and returns is a new one at each call (`create_model()`
        for the student and again for the teacher): moving one does not move the other."""
        mapping: Dict[int, int] = {}
        for value in (result, *result.items):
            if (value.kind in (MODULE, OBJECT) and value.ident is not None
                    and self.heap.made_in.get(value.ident) == id(info.node)):
                mapping.setdefault(value.ident, hash((value.ident, id(site.node))))
        if not mapping:
            return result
        where = id(caller.scope.node) if caller.scope.node is not None else 0
        for old, new in mapping.items():
            self.heap.copy_object(old, new, where)
        return _renamed(result, mapping)

    def _placed_fields(self, receiver: Optional[Value]) -> tuple:
        """Where the receiver's tensors and modules are now: a method runs again once one of them was
        replaced or moved (a metric's `reset()` put a new buffer on the CPU)."""
        if receiver is None or receiver.ident is None:
            return ()
        placed = []
        for field, value in self.heap.fields(receiver.ident).items():
            # (a module's fields are kept as they were made, before it moved; a stray one was put
            # there after the move)
            if value.kind in (TENSOR, MODULE):
                placed.append((field, value.kind, value.device, value.stray is not None))
            if value.kind in (MODULE, OBJECT) and value.ident is not None and value.ident != receiver.ident:
                # (one level down: the metric an evaluator holds)
                placed += [(field, inner, part.device, part.stray is not None)
                           for inner, part in self.heap.fields(value.ident).items() if part.kind == TENSOR]
        return tuple(placed)

    def _run(self, info: FunctionInfo, receiver: Optional[Value], bound: Dict[str, Value],
             site: CallSite, view: Dict[str, Value]) -> Invocation:
        program = self.program
        owner = info.owner
        params = [p.name.value for p in info.parameters()]
        scope = Scope(owner, info.name, info.outer, frozenset(params), info.node,
                      site.building or program.builds_parts(info))
        # Heat comes from the caller: a step function called once from cold code is not a training step.
        interp = Interpreter(program, scope, site.heat)
        interp.silent = 0 if site.recording else 1
        interp.inherited_cpu_path = site.cpu_path
        interp.made_by_callers = site.made_in_step
        env = Env(default_device=site.default_device if site.default_device is not None else program.module_env.default_device,
                  guarded=site.guarded or program.accelerator_only(info, site.cpu_path), current_gpu=site.current_gpu)
        seeded: Dict[str, Value] = {}
        receiver_name = params[0] if receiver is not None and params else ""
        if receiver_name:
            seeded = self.fields_seen_by(info, receiver, receiver_name)
            seeded.update((f"{receiver_name}.{field}", value) for field, value in view.items())
            env.values.update(seeded)
        for name, value in bound.items():
            env.values[name] = value
        before = dict(bound)
        counts = fact_counts(program.facts)
        final = interp.exec_block(info.node.body.body, env)
        interp.settle_cuda_calls(final)
        # (`main()` under `if __name__ == "__main__":` is no condition, only the end of a longer chain)
        note_callers(program.facts, counts, f"{owner.name}.{info.name}" if owner is not None else info.name, site.node,
                     outer_only=site.from_module_level)
        if interp.yields:  # a generator: iterating it gives what it yields
            result = Value(kind=LIST, items=(join_all(interp.yields),), cls="generator")
        elif interp.returns:
            result = join_paths(interp.returns, interp.return_paths, interp.returns_guarded)
        else:
            result = Value(kind=HOST)
        moved = tuple(interp.moves)
        exits = interp.return_gpus + ([] if final.dead else [(final.current_gpu, final.path)])
        gpu = gpu_at_exit(exits) if exits else final.current_gpu
        fields = []
        for name, value in before.items():
            if value.ident is None or value.kind not in (MODULE, OBJECT, ANY):
                continue
            start = seeded if name == receiver_name else {}
            for field, new in set_fields(name, start, final.values).items():
                if new is UNKNOWN_VALUE and not start and self.heap.get(value.ident, field) is not None:
                    # (`model.head` set on one path only, by a call the heap saw: the join could not say
                    # what the other path held, the heap can; an unknown must not overwrite it)
                    continue
                fields.append((value.ident, field, new))
        return Invocation(result, moved, tuple(fields), interp.cuda_initialised, interp.stepped, interp.trained,
                          interp.encloses, gpu != site.current_gpu, gpu)

    def _apply(self, done: Invocation, caller: Interpreter, env: Env, call: cst.CSTNode, clock: int,
               constructor: bool = False) -> None:
        # Moves first: a field the callee set after a move (`self.model = DataParallel(net.cuda())`)
        # already holds what the move made, and must not be rewritten by it.
        for ident, moved, weak in done.moved:
            if moved.kind == MODULE and not weak and not self.heap.made_since(ident, clock):
                # a helper moved the model (`model = set_device(model, devs)`): optimizers the
                # caller built on it before the call are left behind, as after a move written here.
                # (A model the callee made itself is a new object: no optimizer of the caller's holds it.)
                caller.note_optimizers_before_move(moved, moved.device, call, env)
            caller.note_moved(ident, moved, env, weak)
        written: Dict[int, Dict[str, Value]] = {}
        for ident, field, value in done.fields:
            if value.kind == OPTIMIZER and value.via is None and not constructor:
                # built by this call (`self._setup_optim(opt)`): reported there. (One `__init__`
                # builds is reported where it is built: the constructor is where it belongs.)
                value = replace(value, via=call)
            self.heap.store(ident, field, value)
            written.setdefault(ident, {})[field] = value
        for ident, fields in written.items():
            env.set_fields(ident, fields)
        if done.sets_gpu:
            env.current_gpu = done.current_gpu
        if done.cuda_initialised is not None and caller.cuda_initialised is None:
            caller.cuda_initialised = done.cuda_initialised
        if done.steps:
            caller.note_step(trains=done.trains)
        elif done.encloses:
            caller.note_enclosed_step()

    # --- values ---------------------------------------------------------------------

    def default_value(self, info: FunctionInfo, param: cst.Param, site: CallSite) -> Value:
        """A parameter left to its default, evaluated where the function was defined. A device
        string is what this call asks for: a call that leaves `device="cuda"` to its default, on a
        path with no availability check, needs a GPU (mmdetection's `init_detector(config)`)."""
        text = string_value(param.default)
        device = api.parse_device_string(text) if text is not None else None
        if device is not None:
            if device.kind == api.CUDA and not site.guarded and not self.program.accelerator_only(info):
                device = replace(device, kind=UNGUARDED, root=param.default)
            return Value(kind=DEVICE, device=device, origin=param.default, cls="str")
        evaluator = Interpreter(self.program, Scope(outer=info.outer))
        evaluator.silent += 1
        # (`device=torch.device("cuda")` as well: unguarded unless this call's path checked)
        value = evaluator.eval(param.default, Env(guarded=site.guarded or self.program.accelerator_only(info, site.cpu_path)))
        # (`mean=(0.5, 0.5)`; `prepare_batch=_prepare_batch`: a function or class of the file is the
        # same one at every call, unlike a mutable default)
        return value if value.kind in (HOST, DEVICE, FUNCTION, CLASS) or host_data(value) else UNKNOWN_VALUE

    def fields_seen_by(self, info: FunctionInfo, receiver: Value, name: str) -> Dict[str, Value]:
        """`self.x` as the method sees it: the object's fields, else what the class's constructor sets."""
        program = self.program
        owner = info.owner
        fields = self.heap.fields(receiver.ident)
        if not fields and owner is not None and info.name != "__init__":
            program.ensure_class(owner)
            # (no object seen made: what `__init__` sets, except that a tensor another method rebinds,
            # `self.memory = self.memory.to(strategy.device)` in a plugin's `before_training`, may be
            # there already: where it is, is unknown)
            fields = {key[len("self."):]: as_seen_unseeded(key[len("self."):], value, program.rebound_fields)
                      for key, value in owner.attrs.items()}
        seen = {}
        for field, value in fields.items():
            if receiver.kind == MODULE and owner is not None and info.name != "__init__":
                value = program.follows_module(value, owner, receiver.device, receiver.origin, receiver.stray)
            seen[f"{name}.{field}"] = value
        return seen

    def field(self, base: Value, attr: str) -> Optional[Value]:
        """A field of a known object, as stored (None when the heap does not have it)."""
        if base.aliases:
            values = [self.heap.get(ident, attr) for ident in base.aliases]
            return join_all(values) if values and all(v is not None for v in values) else None
        return self.heap.get(base.ident, attr)


def _renamed(value: Value, mapping: Dict[int, int]) -> Value:
    """`value` with the objects in `mapping` replaced by their new identities (an optimizer built on
    one carries it too)."""
    changes = {}
    if value.ident in mapping:
        changes["ident"] = mapping[value.ident]
    if value.owner in mapping:
        changes["owner"] = mapping[value.owner]
    if any(a in mapping for a in value.aliases):
        changes["aliases"] = tuple(mapping.get(a, a) for a in value.aliases)
    if value.items:
        items = tuple(_renamed(item, mapping) for item in value.items)
        if items != value.items:
            changes["items"] = items
    if value.alternatives:  # (each side of a split is the same new object)
        sides = tuple(_renamed(side, mapping) for side in value.alternatives)
        if sides != value.alternatives:
            changes["alternatives"] = sides
    return replace(value, **changes) if changes else value


#: States larger than this are not scanned for the receiver's fields (see `_receiver_view`).
_MAX_VIEW_SCAN = 256


def _receiver_view(call: cst.Call, receiver: Optional[Value], env: Env) -> Dict[str, Value]:
    """The receiver's fields as the caller's path has them (`self.device` set on both sides of an
    availability test, then `self.wrap(model)`): the heap holds the last write on any path, the
    caller's state the join of its paths."""
    func = call.func if isinstance(call, cst.Call) else None
    # (a very large state is not scanned at every call: the heap's view is the fallback, so that the
    # cost of a call stays bounded whatever the size of the function making it)
    if receiver is None or receiver.ident is None or not isinstance(func, cst.Attribute) \
            or len(env.values) > _MAX_VIEW_SCAN:
        return {}
    owner = dotted_name(func.value)
    if owner is None or env.get(owner) is None or env.get(owner).ident != receiver.ident:
        return {}
    prefix = owner + "."
    return {key[len(prefix):]: value for key, value in env.values.items()
            if key.startswith(prefix) and "." not in key[len(prefix):]}


def _returned_through(result: Value, site: CallSite, bound: Dict[str, Value]) -> Value:
    """A value the callee made (not one of its arguments handed back) came back through this call."""
    given = {id(value.origin) for value in bound.values() if value.origin is not None}
    worked = {id(value.host_work) for value in bound.values() if value.host_work is not None}

    def through(value: Value) -> Value:
        # (an argument handed back is not, unless the callee worked on it: a frame it preprocessed)
        worked_here = value.host_work is not None and id(value.host_work) not in worked
        if value.origin is None or (id(value.origin) in given and not worked_here):
            return value
        return replace(value, via=site.node)

    returned = through(result)
    if result.items:
        returned = replace(returned, items=tuple(through(item) for item in result.items))
    if result.keyed:  # `return {"factor": torch.rand(n)}`: each key's value came back through the call too
        returned = replace(returned, keyed=tuple((key, through(item)) for key, item in result.keyed))
    return returned


def _anonymous(value: Value) -> Value:
    return replace(value, ident=None, aliases=()) if value.ident is not None or value.aliases else value


def _is_static(info: FunctionInfo) -> bool:
    return any(getattr(d.decorator, "value", None) == "staticmethod" for d in info.node.decorators)

