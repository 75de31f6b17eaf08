"""Where the hot path is, and the per-step waste recorded there (DEV4xx).

A loop *steps* a model when its body calls a module, and *trains* one when
it calls `.backward()` or `optimizer.step()`.  The flags are set during the
silent fixpoint iterations, so the recording pass already knows what kind of
loop it is in.  Only the innermost loop that does the stepping gets the flag:
the epoch loop around a batch loop runs its own body once per epoch.
"""
from __future__ import annotations

import re
from typing import AbstractSet, List, Optional, Set, Tuple

import libcst as cst

from . import torch_api as api
from .facts import (
    CREATED_THEN_MOVED, FIELD_COPIED_EACH_STEP, HOST_PREPROCESSING, HOST_WORK_CONVERTED, MODEL_MOVED_IN_LOOP, HostSync,
    HotPathWaste, LoaderFeed, Operand,
)
from .lattice import (
    BATCH, DEVICE, HOST, LIST, TUPLE, UNKNOWN, SOURCE_CREATED, SOURCE_FACTORY, SOURCE_LOADER, SOURCE_STEP, SOURCE_UNREGISTERED, SYMBOLIC, TENSOR, Value,
)
from .call_order import calls_in
from .names import dotted_name, integer_value, last_identifier, root_name, statements_in, sub_expressions, walk
from .rebound_fields import ANY_FIELD

#: A branch on these runs only now and then (a logging or checkpoint interval), or does host work
#: on purpose: an offloading switch (`if _offload_inference: z[0] = z[0].cpu()`) trades time for
#: accelerator memory, and its copies are the point, not per-step waste.
_INTERVAL_WORDS = re.compile(
    r"(^|_)(log|logging|print|verbose|display|report|interval|every|freq|frequency|debug|eval|evaluate|save"
    r"|checkpoint|ckpt|writer|tensorboard|wandb|offload|offloading)(_|$)", re.IGNORECASE)


_ROUND_TRIPS = frozenset({".cpu()", ".numpy()"})


class LoopFrame:
    __slots__ = ("steps", "trains", "encloses_steps", "targets", "created", "over_loader", "key", "made", "over_tensor",
                 "loop", "_rebound", "assigned", "feeds_back", "carried", "_walks_modules", "over_constants", "variant")

    def __init__(self, targets: Set[str], over_loader: bool, key: Optional[int] = None) -> None:
        self.key = key            # the loop statement's identity: calls made in the same loop share it
        self.steps = False        # calls a model, backward() or optimizer.step()
        self.encloses_steps = False  # this loop or one nested in it steps a model
        self.trains = False       # calls backward() or optimizer.step()
        self.targets = targets    # names bound by the loop header
        self.created: Set[int] = set()  # modules constructed in the body
        self.over_loader = over_loader
        self.made: Set[int] = set()     # calls evaluated in the body (a tensor made there is made every step)
        self.over_tensor = False  # `for expert in hit_experts:` walks a tensor's elements on the host
        #: `for k in topk:` with `topk=(1, 5)`: a few written-out constants, not the items of a batch
        self.over_constants = False
        self.loop: Optional[cst.CSTNode] = None  # the loop statement (None for a hot function's body)
        self._rebound: Optional[Set[str]] = None
        self.assigned: Set[str] = set()  # names the current iteration has bound so far
        self.feeds_back = False   # a model is called on a value the body rebinds: each step extends the last
        #: names this iteration bound from what the previous one left (`x_in = scale(latents)`)
        self.carried: Set[str] = set()
        #: names this iteration bound from the loop's own variables (`A = self.lora_A[adapter]`): a
        #: different value each time round
        self.variant: Set[str] = set()
        self._walks_modules: Optional[bool] = None

    @property
    def walks_modules(self) -> bool:
        """Does the body call what the loop iterates over (`for layer in self.layers: h = layer(h)`)?
        Then it is one forward through a stack of layers, not a generation loop. Found once, when
        asked (only loops that feed a model its own output are)."""
        if self._walks_modules is None:
            self._walks_modules = self.loop is not None and any(
                root_name(call.func, through_attributes=True) in self.targets for call in calls_in(self.loop.body))
        return self._walks_modules

    @property
    def rebound(self) -> Set[str]:
        """Names the body assigns, found once, when a model is first called in this loop."""
        if self._rebound is None:
            self._rebound = rebound_names(self.loop) if self.loop is not None else set()
        return self._rebound


def few_constants(value: Value) -> bool:
    """A tuple or list of written-out constants (`topk=(1, 5)`): a loop over it runs a fixed,
    small number of times, whatever the data."""
    return value.kind in (TUPLE, LIST) and bool(value.items) and all(
        item.kind == HOST and item.literal is not None for item in value.items)


def on_accelerator(value: Value) -> bool:
    return value.kind in (TENSOR, BATCH) and (value.device.is_accelerator or value.device.kind == SYMBOLIC)


def is_interval_test(test: cst.BaseExpression) -> bool:
    """`if step % 100 == 0`, `if i % args.log_every == 0`, `if should_log:`."""
    for node in sub_expressions(test):
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Modulo):
            return True
        if isinstance(node, cst.Name) and _INTERVAL_WORDS.search(node.value):
            return True
        if isinstance(node, cst.Attribute) and _INTERVAL_WORDS.search(node.attr.value):
            return True
    return False


def rebound_names(loop: cst.CSTNode) -> Set[str]:
    """Plain names a loop's body assigns (not inside nested functions or classes): what one iteration
    hands to the next (`idx = torch.cat([idx, nxt], dim=1)`)."""
    names: Set[str] = set()
    for small, _ in statements_in(loop, enter_definitions=False):
        if isinstance(small, cst.Assign):
            for target in small.targets:
                names |= _names_in(target.target)
        elif isinstance(small, (cst.AugAssign, cst.AnnAssign)):
            names |= _names_in(small.target)
    return names


def _names_in(target: cst.BaseExpression) -> Set[str]:
    if isinstance(target, cst.Name):
        return {target.value}
    if isinstance(target, (cst.Tuple, cst.List)):
        names: Set[str] = set()
        for element in target.elements:
            names |= _names_in(element.value)
        return names
    return set()


#: How hot a function's call site is: inside a training loop, a loop that only steps a model,
#: or a loop's logging interval (never hot, whatever the loop turns out to be).
TRAINING = "training"
STEPPING = "stepping"
QUIET = "quiet"
GENERATING = "generating"  # called once per step of a loop that feeds a model its own output


class HotPathTracker:
    """Mixed into `Interpreter`: loop frames and the DEV4xx facts."""

    frames: List[LoopFrame]
    interval_depth: int
    collecting: int  # inside the arguments of `results.append(...)`
    deciding: int    # inside a test whose branch leaves the loop
    stepped: bool    # this function called a model (or trained one) outside its own loops
    trained: bool
    encloses: bool   # this function steps a model inside a loop of its own

    made_here: Set[int]  # calls this function run evaluated

    def enter_hot_function(self, trains: bool, generates: bool = False) -> None:
        """The whole body of a function called every step behaves like a loop body (of a generation
        loop, when the caller's loop feeds a model what it produced: `scheduler.step(...)`)."""
        frame = self.push_frame(None, over_loader=False)
        frame.steps = frame.encloses_steps = True
        frame.trains = trains
        frame.feeds_back = generates

    @property
    def call_heat(self) -> str:
        """What a function called from here inherits."""
        if self.in_training_step:
            return TRAINING
        if self.interval_depth:
            return QUIET if self.frames else ""
        if self.in_generation_step:
            return GENERATING
        return STEPPING if any(frame.steps for frame in self.frames) else ""

    @property
    def loop_key(self) -> Optional[int]:
        """The innermost loop around this point, to tell which calls share a loop body."""
        return self.frames[-1].key if self.frames else None

    def push_frame(self, target: Optional[cst.BaseExpression], over_loader: bool, key: Optional[int] = None,
                   loop: Optional[cst.CSTNode] = None) -> LoopFrame:
        frame = LoopFrame(_names_in(target) if target is not None else set(), over_loader, key)
        frame.loop = loop
        self.frames.append(frame)
        return frame

    def note_step(self, trains: bool) -> None:
        # What this function does, for a loop that calls it: a step outside this function's own loops
        # makes the caller's loop a stepping one (`agent.decide(obs)`); a step inside them (a whole
        # epoch in `train_one_epoch`) only means the caller's loop encloses stepping.
        if all(frame.key is None for frame in self.frames):
            self.stepped = True
            self.trained = self.trained or trains
        else:
            self.encloses = True
        if self.frames:
            frame = self.frames[-1]
            frame.steps = True
            frame.trains = frame.trains or trains
            for outer in self.frames:
                outer.encloses_steps = True

    def note_loop_assignment(self, name: str, statement: cst.CSTNode) -> None:
        """`x_in = scheduler.scale_model_input(latents, t)` in a loop that rebinds `latents`: `x_in`
        carries what the previous iteration left, so a model called on it feeds back too."""
        frame = self.frames[-1]
        frame.assigned.add(name)
        written = getattr(statement, "value", None)
        if isinstance(written, cst.BaseExpression):
            read = self.program.syntax_fact(written, "names", lambda expr: frozenset(
                n.value for n in walk(expr) if isinstance(n, cst.Name)))  # (indices too)
            if read & (frame.targets | frame.variant):
                frame.variant.add(name)
            else:
                frame.variant.discard(name)
        if frame.key is None or frame.over_loader or frame.trains or not isinstance(statement, cst.Assign):
            return
        read = {n.value for n in sub_expressions(statement.value) if isinstance(n, cst.Name)}
        if read & frame.carried or any(self._left_by_previous(frame, n) for n in read if n != name):
            frame.carried.add(name)
        else:
            frame.carried.discard(name)

    @staticmethod
    def _left_by_previous(frame: LoopFrame, name: str) -> bool:
        """Does `name` hold, here, what the previous iteration bound (read before this one rebinds it)?"""
        return name in frame.rebound and name not in frame.assigned and name not in frame.targets

    def note_model_inputs(self, inputs: List[Tuple[cst.BaseExpression, Value]], callee: cst.CSTNode) -> None:
        """A model is called (not trained) on accelerator values: is one of them what the previous
        iteration of this loop left (autoregressive generation, `idx = torch.cat([idx, nxt])`)?
        (Not when the loop walks the modules it calls, `for layer in self.layers: h = layer(h)`: that
        is one forward through a stack of layers.)"""
        frame = self.frames[-1] if self.frames else None
        if frame is None or frame.key is None or frame.over_loader or frame.trains:
            return
        if root_name(callee, through_attributes=True) in frame.targets:
            return
        for expression, value in inputs:
            name = root_name(expression) if on_accelerator(value) else None
            # (read before this iteration rebinds it: the value the previous iteration left)
            if name and (self._left_by_previous(frame, name) or name in frame.carried):
                frame.feeds_back = True

    def note_enclosed_step(self) -> None:
        """A callee stepped a model in a loop of its own: the loops here enclose stepping."""
        self.encloses = True
        for frame in self.frames:
            frame.encloses_steps = True

    def note_created(self, ident: int) -> None:
        node = self.scope.node
        self.program.contexts.heap.renew(ident, id(node) if node is not None else 0)
        for frame in self.frames:
            frame.created.add(ident)

    @property
    def in_training_step(self) -> bool:
        return self.interval_depth == 0 and any(frame.trains for frame in self.frames)

    @property
    def in_stepping_code(self) -> bool:
        return self.scope.method == "forward" or any(frame.steps for frame in self.frames)

    # --- facts ------------------------------------------------------------------

    @property
    def in_batch_step(self) -> bool:
        """The body of a loop over a data loader that calls a model: evaluation and inference step
        through the data like training does, one batch per iteration."""
        frame = self.frames[-1] if self.frames else None
        return self.interval_depth == 0 and frame is not None and frame.steps and frame.over_loader

    def note_sync(self, expr: cst.CSTNode, value: Value, node: cst.CSTNode, how: str) -> None:
        # Outside training, metrics read per batch (`.item()`) are common practice; an explicit copy of
        # each batch's output to the host that is not kept for after the loop is a round trip.
        round_trip = how in _ROUND_TRIPS and not self.collecting
        # A loop of its own inside a step (`for i in range(batch_size): n = lengths[i].item()`) waits
        # once per item of every batch, in evaluation and inference too.
        per_item = self.in_item_loop
        # A generation loop that collects each new token on the host (`tokens.append(nxt.item())`)
        # waits once per token; the tokens could be gathered on the device and read once.
        # Any other read of a device value there (`gamma = ... if s_tmin <= sigmas[i] else 0.0`, a
        # scheduler's `(timesteps == t).nonzero().item()`) waits at every step before it can queue
        # the next one.
        generating = self.in_generation_step
        in_step = (self.in_training_step or (self.in_batch_step and round_trip) or per_item or generating) \
            and not self.deciding
        if on_accelerator(value) and in_step and self.first_time("sync", value, node):
            self.program.facts.host_syncs.append(HostSync(node, Operand(expr, value), how, per_item=per_item,
                                                          per_token=bool(generating) and not per_item,
                                                          collected=bool(self.collecting)))

    @property
    def in_generation_step(self) -> bool:
        """The body of a loop that calls a model on what its previous iteration produced."""
        frame = self.frames[-1] if self.frames else None
        return (self.interval_depth == 0 and frame is not None and frame.feeds_back and not frame.trains
                and not frame.walks_modules)

    @property
    def in_item_loop(self) -> bool:
        """Inside a loop that calls no model itself, within a training step or a function every step
        calls (a `forward`), outside any logging interval. (A decoding loop that reads each
        hypothesis back, in a script's own evaluation loop, is how search is written: not reported.)"""
        frames = self.frames
        return (self.interval_depth == 0 and len(frames) >= 2 and frames[-1].key is not None
                and not frames[-1].steps and not frames[-1].encloses_steps and not frames[-1].over_tensor
                and not frames[-1].over_constants
                and any(f.steps and (f.key is None or f.trains) for f in frames[:-1]))

    def note_tensor_move(self, receiver_node, receiver: Value, node: cst.Call, target, args) -> None:
        """A tensor or batch moved to `target`: created on the host first? fed by a loader?"""
        if not (target.is_accelerator or target.kind == SYMBOLIC):
            return
        if (receiver.source in (SOURCE_FACTORY, SOURCE_STEP) and not receiver.explicit_device
                and receiver.scalar is not True and self.in_stepping_code and self.made_this_step(receiver)
                and (last_identifier(receiver.origin) in api.GENERATING_FACTORIES or receiver.host_copy)
                and self.first_time("created", receiver, node)):
            self.program.facts.waste.append(HotPathWaste(node, CREATED_THEN_MOVED, Operand(receiver_node, receiver)))
        elif self.copies_kept_host_tensor(receiver_node, receiver) and self.first_time("created", receiver, node):
            holder = "module" if self.scope.owner is not None and self.scope.owner.is_module else "object"
            self.program.facts.waste.append(HotPathWaste(node, FIELD_COPIED_EACH_STEP, Operand(receiver_node, receiver), holder))
        loader = self.program.batch_loaders.get(id(receiver.origin)) if receiver.origin is not None else None
        options = self.program.loader_options.get(id(loader)) if loader is not None else None
        if options is not None and self.recording and self.frames:
            pinned, workers = options
            non_blocking = any(a.keyword == "non_blocking" and dotted_name(a.node.value) == "True" for a in args)
            training = any(frame.trains for frame in self.frames)
            self.program.facts.loader_feeds.append(
                LoaderFeed(loader, node, pinned, workers, non_blocking, training, _explicit_no_workers(loader)))

    def note_host_factory(self, node: cst.Call, env) -> None:
        """A tensor made on the CPU, with no `device=`, by a function that holds an accelerator device
        of its own (a parameter or local): it could have been made there, once."""
        if any(value.kind == DEVICE and not value.device.is_cpu and value.device.kind != UNKNOWN.kind
               for name, value in env.values.items() if "." not in name):
            self.program.made_beside_device.add(id(node))

    def copies_kept_host_tensor(self, receiver_node, receiver: Value) -> bool:
        """`self.class_weights.to(logits.device)` in a step: a CPU tensor an object keeps (made once,
        in `__init__`) is copied to the device again on every step, where moving it once (or
        registering it as a buffer) would copy it once. (A tensor an optimizer learns is copied on
        purpose: gradients flow back through the copy, and a moved one would not learn.)"""
        field = _through_same_data(receiver_node)
        key = dotted_name(field) if isinstance(field, cst.Attribute) else None
        if key is None and isinstance(field, cst.Name):  # `target = self.real_label if real else self.fake_label`
            key = _field_stored_in(receiver.stored)
        if id(receiver.origin) in self.program.contexts.heap.optimized_tensors:
            return False
        if self.scope.method in api.MOVE_METHODS:
            return False  # (a batch's own `to()` moving its fields: how a batch moves, once per batch)
        owner = self.scope.owner
        if owner is None or not (owner.is_module or _keeps_a_device(owner)
                                 or id(receiver.origin) in self.program.made_beside_device):
            # (a plain object that is never told the device, a noise scheduler built before anyone
            # knows it, can neither register a buffer nor move the tensor once: copying its table to
            # where the input is, `self.alphas_cumprod.to(sample.device)`, is how such code is written)
            return False
        rebound = self.program.rebound_fields
        if key is None or ANY_FIELD == rebound or key.rsplit(".", 1)[-1] in self.program.moved_fields:
            return False  # (a field the object replaces itself, `self.pe = self.pe.to(x.device)`: moved once)
        return (key is not None and key.startswith("self.") and receiver.kind == TENSOR and receiver.device.is_cpu
                and not receiver.parameter and receiver.source in (SOURCE_CREATED, SOURCE_UNREGISTERED)
                and receiver.origin is not None and not isinstance(receiver.origin, cst.Param)
                and self.in_stepping_code and not self.interval_depth and not self.made_this_step(receiver))

    def note_call(self, node: cst.Call) -> None:
        """A call evaluated here: what it makes is made once per iteration of each loop around it."""
        self.made_here.add(id(node))
        for frame in self.frames:
            frame.made.add(id(node))

    def made_this_step(self, value: Value) -> bool:
        """Was `value` made in the step being read (this loop's body, or this `forward`), not once
        before the loop (a list of CPU batches built up front and moved one by one)?"""
        made = {id(value.origin), id(value.via)} - {id(None)}
        if any(made & frame.made for frame in self.frames):
            return True
        # (in a function a step calls, outside loops of its own, what its callers made this step
        # counts too: a kernel a sibling helper built, handed in to be moved)
        own_loop = any(frame.key is not None for frame in self.frames)
        return not own_loop and (bool(made & self.made_here) or any(made & calls for calls in self.made_by_callers))

    @property
    def made_in_step(self) -> Tuple[AbstractSet[int], ...]:
        """The calls evaluated in the step running here, for a callee to tell what was made this step
        (the sets themselves, one per caller up the chain: nothing is copied per call)."""
        if any(frame.key is not None for frame in self.frames):
            return (self.frames[-1].made,)
        return tuple(frame.made for frame in self.frames) + (self.made_here,) + self.made_by_callers

    def note_preprocessing(self, qualname: str, args, node: cst.Call) -> None:
        if not qualname.startswith(api.PREPROCESSING_ROOTS) or not any(f.steps and f.over_loader for f in self.frames):
            return
        for arg in args:
            value = arg.value
            if value.source == SOURCE_LOADER and (value.kind == HOST or value.device.is_cpu):
                if self.first_time("preprocess", value, node):
                    self.program.facts.waste.append(
                        HotPathWaste(node, HOST_PREPROCESSING, Operand(arg.node.value, value), qualname))
                return

    def note_host_work(self, expr, data: Value, node: cst.Call) -> None:
        """`torch.from_numpy(frame.astype(np.float32) / 255)` every step: the numpy work on each
        batch or frame is host preprocessing, reported where it becomes a tensor (once per batch:
        not again when a numpy call on it was reported already)."""
        if data.source != SOURCE_LOADER or not self.in_stepping_code or self.interval_depth:
            return
        if self.first_time("preprocess", data, node):
            work = " ".join(self.program.module.code_for_node(data.host_work).split())
            detail = work if len(work) <= 40 else work[:37] + "..."
            self.program.facts.waste.append(HotPathWaste(node, HOST_WORK_CONVERTED, Operand(expr, data), detail,
                                                         data.host_work))

    def note_module_move(self, receiver_node, receiver: Value, node: cst.Call, target) -> None:
        frame = next((f for f in reversed(self.frames) if f.encloses_steps), None)
        if frame is None or not self.recording or not target.known or target.is_cpu or self.interval_depth:
            return  # (under an interval or in an exception handler it moves now and then)
        root = (dotted_name(receiver_node) or "").split(".", 1)[0]
        if root in frame.targets or (receiver.ident is not None and receiver.ident in frame.created) or any(
                root in inner.variant for inner in self.frames):
            return  # a different model each iteration (`B = self.lora_B[adapter]; B.to(x.device)`)
        if receiver.owner is not None and not receiver.cls:
            return  # `getattr(self, f"{kind}_inv_freq")`: a part found by name, a buffer as likely as a model
        if root == "self" and self.scope.in_module_init:
            return  # a module moving itself while it is built: a new one each time it is constructed
        if any((dotted_name(arg.value) or "").split(".", 1)[0] in frame.targets for arg in node.args):
            return  # a different device each iteration (`for device in devices: model.to(device)`)
        if self.first_time("module-move", receiver, node):
            self.program.facts.waste.append(HotPathWaste(node, MODEL_MOVED_IN_LOOP, Operand(receiver_node, receiver)))


def _explicit_no_workers(loader: cst.CSTNode) -> bool:
    """`DataLoader(..., num_workers=0)`: loading in the main process, written out on purpose."""
    return isinstance(loader, cst.Call) and any(
        arg.keyword is not None and arg.keyword.value in api.LOADER_WORKER_KEYWORDS and integer_value(arg.value) == 0
        for arg in loader.args)


def _through_same_data(node: cst.CSTNode) -> cst.CSTNode:
    """`self.ids.unsqueeze(0).expand(n, -1)`: the expression whose data it is (`self.ids`)."""
    while (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
           and node.func.attr.value in api.TENSOR_SAME_DATA_METHODS):
        node = node.func.value
    return node


def _keeps_a_device(owner) -> bool:
    """Does an object of this class hold a device (`self.device = device`)? It could move its
    tensors there once."""
    return any(value.kind == DEVICE or api.is_device_name(name.rsplit(".", 1)[-1]) for name, value in owner.attrs.items())


def _field_stored_in(statement: Optional[cst.CSTNode]) -> Optional[str]:
    """`self.real_label` for the `self.real_label = torch.tensor(1.0)` that stored a value."""
    targets = statement.targets if isinstance(statement, cst.Assign) else ()
    if len(targets) == 1 and isinstance(targets[0].target, cst.Attribute):
        return dotted_name(targets[0].target)
    return None
