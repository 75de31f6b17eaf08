"""Call semantics: how a call is dispatched, and module, batch and optimizer methods.

Mixed into `Interpreter`. Calls of torch and library functions, tensor methods and
builtins are answered by the handler registries of `handlers/`; the names they know
are the tables of `torch_api`.
"""
from __future__ import annotations

import re
from dataclasses import replace
from typing import List, Optional, Set, Tuple

import libcst as cst

from . import torch_api as api
from .call_args import Arg
from .device_choice import PER_RANK
from .facts import (
    ACCELERATOR_DEFAULT, MODEL_CALL, OPERATION, ApiMisuse, DeviceMismatch, DiscardedMove, HostConversion, Operand,
    OptimizerBeforeMove, ParallelOnCpu,
)
from .handlers.builtins import BUILTINS
from .handlers.module_methods import MODEL_CALL_METHODS, MODULE_METHODS, model_call_result
from .handlers.registry import ApiCall
from .handlers.tensor_methods import TENSOR_METHODS, computed_on
from .handlers.torch_functions import FUNCTIONS, check_device_ids
from .heap import SEQUENCE_ITEMS, function_key
from .lattice import (
    ANY, BATCH, CLASS, CPU, CUDA, DEVICE, DISTRIBUTION, FUNCTION, HOST, HOST_PATH, LIST, LOADER, METHOD, MODULE, OBJECT,
    OPTIMIZER, OWN_FORWARD_MOVES, REF, SOURCE_CREATED, SOURCE_CURRENT_DEVICE, SOURCE_DEVICE_AWARE, SOURCE_FACTORY,
    SELECTED, SOURCE_LOAD, SOURCE_LOADER, SOURCE_MIXED, SOURCE_STEP, SOURCE_TOKENIZER, SOURCE_UNREGISTERED,
    SYMBOLIC, TENSOR, TOKENIZER, TUPLE, UNGUARDED, UNKNOWN, UNKNOWN_VALUE, Device, Value, collected_at, conflicts, container_of,
    join_all, literal_of, same_placement, symbolic,
)
from .names import dotted_name, integer_value, last_identifier, string_value
from .project import PROJECT_SOURCE
from .value_queries import is_move_call, placed, replaced_part

#: Unknown callables that are surely models or losses, judged by their name.
_MODEL_NAME = re.compile(r"(^|_)(model|net|network|encoder|decoder|backbone|classifier|generator|discriminator|policy|critic|actor)s?$", re.IGNORECASE)
_LOSS_NAME = re.compile(r"(^|_)(criterion|loss_fn|loss_func|loss_function|lossfn)$", re.IGNORECASE)
#: Containers written out at a call: a model or a loss takes them apart itself.
_LITERAL_CONTAINERS = (cst.List, cst.Dict, cst.ListComp, cst.DictComp)
_TOKENIZER_BATCH_METHODS = frozenset({"__call__", "encode_plus", "batch_encode_plus", "pad", "apply_chat_template", "prepare_seq2seq_batch"})
_INPUT_KEYWORDS = frozenset({"input", "inputs", "x", "input_ids", "pixel_values", "inputs_embeds", "input_values",
                             "input_features", "images", "image", "src", "tgt",
                             # masks are computed with the scores, on the model's device (`nn.MultiheadAttention`,
                             # `nn.Transformer*`, Hugging Face models)
                             "attn_mask", "key_padding_mask", "attention_mask", "src_mask", "tgt_mask", "memory_mask",
                             "src_key_padding_mask", "tgt_key_padding_mask", "memory_key_padding_mask"})
#: Recurrent state handed to a model beside its input: it must live on the model's device.
_STATE_NAME = re.compile(r"^(hidden|hx|h0|c0|h|c|state|states|hidden_state|memory)$", re.IGNORECASE)
_OPTIMIZER_NAME = re.compile(r"(^|_)(optim|optimizer|optimiser|opt)(_\w+)?$", re.IGNORECASE)


#: What an argument of these kinds hands on cannot move a module: a number, a device, a tensor.
_HOLDS_NO_MODULE = frozenset({HOST, DEVICE, TENSOR, TOKENIZER, CLASS, FUNCTION, LOADER, OPTIMIZER})
#: Holders whose fields are no submodules of a module they hang from (a config object, a dict of settings).
_PLAIN_HOLDERS = frozenset({OBJECT, HOST, LIST, TUPLE})


class CallEvaluator:
    # --- entry -------------------------------------------------------------------

    @property
    def factory_source(self) -> str:
        if self.in_hot_code:
            return SOURCE_FACTORY
        return SOURCE_STEP if self.in_stepping_code else SOURCE_CREATED

    def eval_call(self, node: cst.Call, env, discarded: bool) -> Value:
        self.note_call(node)
        func = node.func
        if isinstance(func, cst.Attribute):
            key = dotted_name(func)
            bound = self.lookup(key, env) if key is not None else None
            # (an object of this file held in a field is called through its `__call__`: `self.tokenizer(texts)`;
            # a library function held in one is that function: `self.window_fn = torch.hann_window`)
            if bound is not None and (bound.kind in (MODULE, TOKENIZER, FUNCTION, ANY, METHOD, REF)
                                      or (bound.kind == OBJECT and bound.cls)):
                return self.call_bound(bound, func, node, self.eval_args(node, env), env)
            receiver = self.eval(func.value, env)
            name = func.attr.value
            collecting = name in api.COLLECTING_METHODS
            self.collecting += collecting
            try:
                args = self.eval_args(node, env)
            finally:
                self.collecting -= collecting
            if receiver.kind == REF:
                return self.api_call(f"{receiver.cls}.{name}", node, args, env)
            return self.method_call(receiver, func.value, name, node, args, env, discarded)
        callee = self.eval(func, env)
        args = self.eval_args(node, env)
        if isinstance(func, cst.Name) and self.lookup(func.value, env) is None:
            return self.builtin_call(func.value, node, args, env)
        return self.call_bound(callee, func, node, args, env)

    def call_bound(self, callee: Value, func, node: cst.Call, args: List[Arg], env, of_several: bool = False) -> Value:
        if callee.kind == CLASS and callee.alternatives:  # one of several classes: one of their objects
            return join_all([self.call_bound(side, func, node, args, env, of_several=True) for side in callee.alternatives])
        if callee.bound:  # `functools.partial(f, sync=True)()`: what partial bound comes first
            args = [Arg(*pair) for pair in callee.bound] + list(args)
        if callee.kind == REF:
            return self.api_call(callee.cls, node, args, env, callee)
        if callee.kind == FUNCTION and isinstance(callee.origin, cst.Lambda):
            return self.call_lambda(callee.origin, args, env)
        if callee.kind in (CLASS, FUNCTION):
            # Summaries say what comes back, not what the callee did to a module it was handed:
            # unless the function visibly leaves its arguments where they are.
            self.escape(self.program.arguments_it_may_move(callee, args), env)
            if callee.kind == CLASS:
                wrapper = self.program.parallel_base(callee.cls, self)
                if wrapper is not None:  # `class MMDataParallel(nn.DataParallel)`: built as the wrapper is
                    return replace(self.api_call(wrapper, node, args, env), cls=callee.cls)
                instance = self.program.instantiate(callee, node, args, env, self, of_several)
                if instance.ident is not None:
                    self.note_created(instance.ident)
                return instance
            return self.program.call_function(callee, node, args, env.guarded, self.recording, self.call_heat, self, env)
        if callee.kind == TOKENIZER:
            return self.tokenizer_call("__call__", node, args)
        if callee.kind == METHOD and callee.items:  # a bound method called later: `hook(self)`
            return self.method_call(callee.items[0], func, callee.cls, node, args, env, discarded=False)
        return self.call_value(callee, func, node, args, last_identifier(func), env)

    def eval_args(self, node: cst.Call, env) -> List[Arg]:
        return [Arg(arg, self.eval(arg.value, env)) for arg in node.args]

    # --- facts ---------------------------------------------------------------------

    def report_once(self, value: Value, node: cst.CSTNode) -> bool:
        """One root cause, one report: true the first time a value is reported."""
        if not self.recording:
            return False
        key = id(value.origin) if value.origin is not None else id(node)
        if key in self.program.reported:
            return False
        self.program.reported.add(key)
        return True

    def first_time(self, kind: str, value: Value, node) -> bool:
        """Like `report_once`, for the families that report other things about the same value."""
        key = (kind, id(value.origin) if value.origin is not None else id(node))
        if not self.recording or key in self.program.hot_reported:
            return False
        self.program.hot_reported.add(key)
        return True

    def record_misuse(self, node, kind: str, api_name: str, device: str = "") -> None:
        if self.recording:
            self.program.facts.misuses.append(ApiMisuse(node, kind, api_name, device))

    def note_unregistered_use(self, operands: List[Tuple[cst.CSTNode, Value]]) -> None:
        """A plain CPU tensor attribute meets something that may be on the module's device."""
        if not self.recording:
            return  # (a generic pass of a method every caller reaches: its callers' passes tell)
        stored = [v for _, v in operands if v.source == SOURCE_UNREGISTERED and v.origin is not None]
        # (the other operand is known to be off the CPU or is the method's tensor input, which comes
        # on the module's device; a value we know nothing of, such as a sample a library drew,
        # confirms nothing)
        if stored and any(v.source != SOURCE_UNREGISTERED and (
                (placed(v) and not v.device.is_cpu) or (v.kind in (TENSOR, BATCH) and isinstance(v.origin, cst.Param)))
                for _, v in operands):
            self.program.unregistered_used.update(id(v.origin) for v in stored)

    def record_mismatch(self, node, context, anchor: Operand, offender: Operand, operation: str) -> None:
        if offender.value.source == SOURCE_UNREGISTERED:  # DEV105's root cause, reported where it is stored
            if offender.value.origin is not None and self.recording:
                self.program.unregistered_used.add(id(offender.value.origin))
            return
        # A model left on the CPU is one root cause however many inputs reach it.
        root = anchor if context == MODEL_CALL and anchor.value.device.is_cpu else offender
        if self.report_once(root.value, root.node):
            self.program.facts.mismatches.append(DeviceMismatch(node, context, anchor, offender, operation))

    def check_operands(self, node, operands: List[Tuple[cst.CSTNode, Value]], operation: str, arithmetic: bool) -> Value:
        """Operands of one op must share a device; the result lives there."""
        self.note_unregistered_use(operands)
        known = [(n, v) for n, v in operands if placed(v)]
        anchor = next(((n, v) for n, v in known if not v.device.is_cpu), None)
        shaped = any(v.scalar is False for _, v in operands) and operation.strip(".()") not in api.REDUCTIONS
        if anchor is None:
            # A CPU result needs CPU operands; an unknown operand may be a GPU tensor that
            # legally absorbs a 0-dim CPU tensor, but not a shaped one (that would crash).
            cpu_shaped = any(v.scalar is False for _, v in known)
            all_cpu = bool(known) and all(
                v.kind == HOST or (placed(v) and v.device.is_cpu) or (cpu_shaped and not v.device.known)
                for _, v in operands)
            if not all_cpu:
                return Value(kind=TENSOR, origin=node)
            # A CPU result is the CPU operand carried on: keep where it came from (a plain tensor
            # attribute among them first: the result is on the CPU because it never moved)
            first = next((v for _, v in known if v.source == SOURCE_UNREGISTERED), known[0][1])
            return Value(kind=TENSOR, device=CPU, origin=first.origin or node, source=first.source, via=first.via,
                         stored=first.stored, explicit_device=first.explicit_device, scalar=False if shaped else None)
        for n, v in known:
            if v is anchor[1] or not conflicts(anchor[1].device, v.device):
                continue
            if arithmetic and v.scalar is not False:
                continue  # a 0-dim CPU tensor may meet an accelerator tensor
            self.record_mismatch(node, OPERATION, Operand(*anchor), Operand(n, v), operation)
        return Value(kind=TENSOR, device=anchor[1].device, origin=node, scalar=False if shaped else None)

    # --- devices --------------------------------------------------------------------

    def device_argument(self, expr: cst.BaseExpression, value: Value, env) -> Optional[Device]:
        """The device an argument names; None when it names no device (a dtype)."""
        if value.kind == DEVICE:
            if value.device.known:
                return value.device
            if value.source == SOURCE_MIXED:
                return UNKNOWN
            return self.symbolic_device(expr, env) or UNKNOWN
        if value.kind in (TENSOR, BATCH):
            return value.device
        if value.kind == REF:
            if api.is_dtype(value.cls):
                return None
            return api.tensor_type_device(value.cls) or self.symbolic_device(expr, env) or UNKNOWN
        literal = integer_value(expr)
        if literal is not None:
            return Device(CUDA, literal)
        if value.kind == HOST and value.source != SOURCE_CURRENT_DEVICE and api.is_dtype_name(last_identifier(expr)):
            return None  # `mask.to(dtype)` with `dtype=inputs_embeds.dtype` bound by the call: a cast
        if value.kind == HOST:
            if value.literal == (None,):  # `device=None` (a default left alone): the default device
                return env.default_device
            if value.source == SOURCE_CURRENT_DEVICE:  # `.to(torch.cuda.current_device())`
                return Device(CUDA)
            if isinstance(literal_of(value), int) and not isinstance(literal_of(value), bool):
                return Device(CUDA, literal_of(value))  # `gpu=0` bound by the call
            if api.is_device_name(last_identifier(expr)):
                return Device(CUDA, key=PER_RANK)  # `args.gpu`, `local_rank`: an index each process picks
            return UNKNOWN
        name = last_identifier(expr)
        if api.is_dtype_name(name):
            return None
        if value.device.known and value.kind == ANY:
            return value.device
        if value.source == SOURCE_MIXED or (
                value.kind == ANY and value.source == PROJECT_SOURCE and isinstance(value.origin, cst.Call)):
            return UNKNOWN  # (what another file's function gave: its summary says, not the name)
        return self.symbolic_device(expr, env) or UNKNOWN

    def symbolic_device(self, expr: cst.BaseExpression, env) -> Optional[Device]:
        """`device`, `args.device`, `self.device`: a device variable we cannot see into."""
        key = dotted_name(expr)
        if key is None or not api.is_device_name(key.rsplit(".", 1)[-1]):
            return None
        if "." in key and not api.is_settings_attribute(key):
            return None  # `hidden.device`: wherever that tensor is, not a chosen device
        if key == "self.device" and self.scope.owner is not None and self.scope.owner.is_module:
            return self.program.self_device()
        return symbolic(key)

    def move_target(self, method: str, node: cst.Call, args: List[Arg], env) -> Optional[Device]:
        """Where `x.<method>(...)` puts x; None when it does not move it."""
        device_kw = next((a for a in args if a.keyword == "device"), None)
        if device_kw is not None:
            return self.placement(device_kw, node, env)
        positional = [a for a in args if a.keyword is None and not a.node.star]
        if method == "cpu":
            return CPU
        if method in ("mps", "xpu"):
            return Device(method)
        if method == "cuda":
            if positional and integer_value(positional[0].node.value) is None:
                arg = positional[0]
                target = self.device_argument(arg.node.value, arg.value, env)
                # (`.cuda(args.gpu)` is on a GPU whatever `args.gpu` holds: a chosen device that
                # may be the CPU is no fallback there, nor the device the code chose)
                if target is not None and target.known and target.kind != SYMBOLIC:
                    self.note_placement(target, arg.value if arg.value.kind == DEVICE else None, node, env)
                    return target
            if positional:
                # `.cuda(args.gpu)`: an index computed at run time, one GPU per process
                index = integer_value(positional[0].node.value)
                gpu = Device(CUDA, index, PER_RANK if index is None else "")
            else:
                # a bare `.cuda()` lands on the current GPU: GPU 0 in a process that has not
                # chosen one, the one `torch.cuda.set_device(local_rank)` chose afterwards
                gpu = env.current_gpu.device if env.current_gpu is not None else Device(CUDA)
            target = self.accelerator_literal(gpu, env, node)
            self.note_placement(target, None, node, env, bare_cuda=True)
            return target
        for arg in positional:  # `.to(device)`, `.to(other)`, `.to(device, dtype)`, `.to(dtype)`
            target = self.placement(arg, node, env)
            if target is not None:
                return target
        return None

    def placement(self, arg: Arg, use: cst.CSTNode, env) -> Optional[Device]:
        """The device an argument places something on, noted for the portability rules."""
        target = self.device_argument(arg.node.value, arg.value, env)
        if target is not None:
            self.note_placement(target, arg.value if arg.value.kind == DEVICE else None, use, env)
        return target

    # --- torch and library functions ----------------------------------------------

    def api_call(self, qualname: str, node: cst.Call, args: List[Arg], env, callee: Value = UNKNOWN_VALUE) -> Value:
        if self.exits(qualname):
            env.dead = True
            return Value(kind=HOST)
        self.note_cuda_call(qualname, node)
        if self.program.place.trains(qualname):
            self.note_step(trains=True)
        project = self.program.place.call(qualname, node, args, env, self.call_heat, self.recording, self.loop_key)
        if project is not None:
            self.escape(args, env)
            forget_assumed_gpu(qualname, env)
            if project.kind == MODULE and project.device.is_cpu and any(_gives_a_module(a) for a in args):
                # a module another file builds from the one it is given (`get_path_model(model=m)`) is
                # made from that module's tensors, wherever they are: its summary cannot say where
                project = replace(project, device=UNKNOWN)
            if project.kind == MODULE and any(a.keyword == "device" for a in args):
                # `SFTLoss(actor, device=...)`: a class of the project told where to build itself
                project = replace(project, device=self.construction_device(args, env, node))
            if project.kind == MODULE:
                self.note_created(project.ident)
            return project
        answer = FUNCTIONS.dispatch(ApiCall(qualname, node, args, env, self, callee=callee))
        if answer is not None:
            return answer
        if not qualname.startswith("torch."):
            self.escape(args, env)
            forget_assumed_gpu(qualname, env)
        # told the device, or given a module to wrap (`TensorDictModule(net, ...)`): where what it
        # makes lives is that code's business
        if any(a.keyword in ("device", "map_location") or a.value.kind == MODULE for a in args):
            return Value(source=SOURCE_DEVICE_AWARE)
        return UNKNOWN_VALUE

    def note_moved(self, ident: int, moved: Value, env, weak: bool = False) -> None:
        """An object moved in place: every alias here, every field holding it, and the caller (an
        effect of this call) see it."""
        env.replace_identity(ident, moved, weak)
        self.program.contexts.heap.replace_identity(ident, moved, weak)
        self.moves.append((ident, moved, weak))

    def note_part_left_behind(self, key: str, owner: Value, statement: cst.CSTNode, env) -> None:
        """A part of a module on the accelerator was replaced by a new CPU module: calls and wrappers
        of the module see that until it moves again."""
        partial = replace(owner, stray=statement)
        if owner.ident is not None:
            self.note_moved(owner.ident, partial, env)
        env.values[key] = partial

    def escape(self, args: List[Arg], env) -> None:
        """Modules handed to code we cannot see may be moved by it (hooks, dispatch, offload)."""
        for arg in args:
            root = dotted_name(arg.node.value)
            if root is None or arg.value.kind in _HOLDS_NO_MODULE:
                continue  # (`self.in_features` hands a number on, not the module it is read from)
            if arg.value.kind != MODULE and isinstance(arg.node.value, cst.Attribute) \
                    and self.eval(arg.node.value.value, env).kind in _PLAIN_HOLDERS:
                continue  # (`asdict(self.cfg.decoder)` hands on a field of a config object, not the module)
            root = root.split(".", 1)[0]
            value = self.lookup(root, env)
            if value is not None and value.kind in (MODULE, ANY) and (value.device.known or value.source == PROJECT_SOURCE):
                if value.ident is not None:
                    self.note_moved(value.ident, value.with_device(UNKNOWN), env)
                env.values[root] = replace(value.with_device(UNKNOWN), source="", cls="") if value.kind == ANY else value.with_device(UNKNOWN)

    def operands_of(self, args: List[Arg]) -> List[Tuple[cst.CSTNode, Value]]:
        """The tensors an op computes with. A sequence is expanded where ops take tensors as one
        (`torch.cat([a, b])`, `torch.einsum(eq, [a, b])`: the first argument after an equation);
        elsewhere a tuple is sizes or options (`F.interpolate(x, (h, w))`)."""
        operands = []
        positional = [a for a in args if a.keyword is None and not a.node.star]
        first = next((a for a in positional if string_value(a.node.value) is None), None)
        for arg in args:
            value = arg.value
            if value.kind in (TUPLE, LIST) and arg is not first:
                continue
            if value.kind == TUPLE:
                expr = arg.node.value
                nodes = [e.value for e in expr.elements] if isinstance(expr, (cst.List, cst.Tuple)) else [expr] * len(value.items)
                operands.extend(zip(nodes, value.items))
            elif value.kind == LIST and value.items:
                operands.append((arg.node.value, value.items[0]))
            else:
                operands.append((arg.node.value, value))
        return operands

    def first_device(self, args: List[Arg], env) -> Device:
        if not args:
            return UNKNOWN
        return self.device_argument(args[0].node.value, args[0].value, env) or UNKNOWN

    def note_device_state(self, value: Value) -> None:
        """What a `torch.load` gave is restored into a module or optimizer, or used as a model."""
        if value.source == SOURCE_LOAD and isinstance(value.origin, cst.Call):
            self.program.facts.requirements.device_state_loads.add(id(value.origin))

    def note_optimizers_before_move(self, receiver: Value, target: Device, node: cst.Call, env) -> None:
        """A module moves to an accelerator: optimizers built on it while it was on the CPU."""
        if receiver.ident is None or not (target.is_accelerator or target.kind == SYMBOLIC):
            return
        heap = self.program.contexts.heap
        loaded = heap.optimizer_state
        for value in _held_optimizers(env.values.values(), receiver.ident) + heap.optimizers_of(receiver.ident):
            if value.device.is_cpu and heap.built_on_current(value, receiver.ident):
                state_at, inside = value.state_at, None
                if state_at is None and value.origin is not None and id(value.origin) in loaded:
                    # (loaded inside a helper this function handed the optimizer to: that call is
                    # what comes too early)
                    state_at = loaded[id(value.origin)]
                    through = heap.state_loaded_through(id(value.origin), function_key(self.scope.node))
                    if through is not None:
                        state_at, inside = through, state_at
                # (a run that loads the state, `run(resume=True)` after `run(resume=False)`, reports
                # the load even when another run already reported the construction)
                if self.first_time("optimizer state" if state_at is not None else "optimizer", value, node):
                    # (an optimizer a helper method built is reported at the call of that helper)
                    fact = OptimizerBeforeMove(state_at or value.via or value.origin, value.cls or "optimizer", node,
                                               state_at is not None, of_several=value.ident is None,
                                               loaded_inside=inside)
                    self.program.facts.optimizers_before_move.append(fact)
                    if value.origin is not None:
                        self.optimizers_left_behind.setdefault(id(value.origin), []).append(fact)

    def note_optimized_tensor_rebound(self, target: cst.BaseExpression, value: Value, env) -> None:
        """`self.log_alpha = self.log_alpha.to(device)` after `Adam([self.log_alpha])`: the name now
        holds a copy; the optimizer keeps updating the CPU tensor, and the copy never learns. (A
        `.to()` used in an expression is fine: gradients flow back through it to the tensor.)"""
        move = value.origin
        key = dotted_name(target)
        if not (self.recording and key is not None and isinstance(move, cst.Call) and is_move_call(move)
                and isinstance(move.func, cst.Attribute) and dotted_name(move.func.value) == key
                and (value.device.is_accelerator or value.device.kind == SYMBOLIC)):
            return
        old = self.lookup(key, env)
        heap = self.program.contexts.heap
        built = heap.optimized_tensors.get(id(old.origin)) if old is not None and old.origin is not None else None
        if built is None or not old.device.is_cpu or not self.first_time("optimized tensor copied", old, move):
            return
        optimizer, name = built
        self.program.facts.optimizers_before_move.append(OptimizerBeforeMove(optimizer, name, move, False, copied_tensor=True))

    def construction_device(self, args: List[Arg], env, node) -> Device:
        """`nn.Linear(4, 4, device=d)`, `create_model(name, device=d)`: built on d."""
        device_kw = next((a for a in args if a.keyword == "device"), None)
        if device_kw is None:
            return env.default_device
        return self.placement(device_kw, node, env) or UNKNOWN

    def check_host_conversion(self, expr, value: Value, node, api_name: str, env) -> None:
        if value.kind == TUPLE and value.items:  # `np.sum([a, b])`: the tensors it holds
            value = join_all(list(value.items))
        # (on the host side of `if device.type == "cuda":` a tensor on a device variable is on the CPU)
        symbolic_here = value.device.kind == SYMBOLIC and env.path != HOST_PATH
        if value.kind in (TENSOR, BATCH) and (value.device.is_accelerator or symbolic_here):
            if self.report_once(value, expr):
                self.program.facts.host_conversions.append(HostConversion(node, Operand(expr, value), api_name))

    # --- builtins ---------------------------------------------------------------------

    def builtin_call(self, name: str, node: cst.Call, args: List[Arg], env) -> Value:
        answer = BUILTINS.dispatch(ApiCall(name, node, args, env, self))
        return answer if answer is not None else UNKNOWN_VALUE

    # --- methods ------------------------------------------------------------------------

    def forget_fields(self, receiver: Value, receiver_node, env) -> None:
        """A method the file cannot see ran on the object (a base class of another file): the tensors
        its fields held may have been replaced or moved (avalanche's `self._unpack_minibatch()`)."""
        key = dotted_name(receiver_node)
        if key is not None:
            prefix = key + "."
            for name, value in list(env.values.items()):
                if name.startswith(prefix) and value.kind in (TENSOR, BATCH, LIST, TUPLE):
                    env.values[name] = UNKNOWN_VALUE
        if receiver.ident is not None:
            heap = self.program.contexts.heap
            for field, value in heap.fields(receiver.ident).items():
                if value.kind in (TENSOR, BATCH, LIST, TUPLE):
                    heap.store(receiver.ident, field, UNKNOWN_VALUE)

    def method_call(self, receiver: Value, receiver_node, name: str, node: cst.Call, args: List[Arg], env, discarded: bool) -> Value:
        self.program.note_self_call(self, receiver_node, name)
        if _is_super(receiver_node):
            inherited = self.program.call_super(name, node, args, self, env)
            if inherited is not None:
                return inherited
        if receiver.kind == OBJECT and receiver.alternatives:  # one of several objects: what one of them does
            return join_all([self.method_call(side, receiver_node, name, node, args, env, discarded)
                             for side in receiver.alternatives])
        if receiver.keyed and name in api.DICT_MUTATORS:
            forgotten = replace(receiver, keyed=())
            key = dotted_name(receiver_node)
            if key is not None:
                env.values[key] = forgotten
            receiver = forgotten
        if name == "update" and args and receiver.kind in (BATCH, LIST) and (receiver.kind == BATCH or receiver.cls == "dict"):
            for arg in args:  # `batch.update(moved)`: it may hold those values now
                added = self.element_of(arg.value, arg.node.value, node) if arg.keyword is None else UNKNOWN_VALUE
                self.grow_container(receiver, receiver_node, added, env)
            return Value(kind=HOST)
        if name in api.STATE_RESTORING_METHODS and args:
            self.note_device_state(args[0].value)
        elif name in api.MOVE_METHODS or name in api.MODEL_USE_METHODS:
            self.note_device_state(receiver)
        kind = receiver.kind
        # a class of the file that writes its own `to` (a pipeline moving its parts) is read, not assumed
        own_move = kind == OBJECT and name in api.MOVE_METHODS and self.program.defines(receiver.cls, name)
        if kind == MODULE or (kind in (ANY, OBJECT) and name in api.MOVE_METHODS and name != "to_empty" and not own_move):
            if name in api.MOVE_METHODS:
                return self.move_in_place(receiver, receiver_node, name, node, args, env, discarded)
            if kind == MODULE:
                attribute = self.attribute_of(receiver, name, node.func, env)
                if attribute.kind == MODULE:
                    return self.module_call(attribute, node.func, node, args, "call", env)
                return self.module_method(receiver, receiver_node, name, node, args, env)
        if (kind == OBJECT and name in _SEQUENCE_GROWERS and receiver.ident is not None and args
                and not self.program.defines(receiver.cls, name) and self.program.is_sequence_class(receiver.cls)):
            # `processors.append(SuppressTokens(...))` on a `class ProcessorList(list)`: the object
            # holds what it was given, and iterating it (`for p in self:`) yields one of those
            given = args[-1]  # (`insert(i, x)`: x)
            added = given.value if name != "extend" else self.element_of(given.value, given.node.value, node)
            self.program.contexts.heap.store(receiver.ident, SEQUENCE_ITEMS, added, strong=False)
            return Value(kind=HOST)
        if kind == OBJECT and receiver.cls and not self.program.defines(receiver.cls, name):
            # no method of that name: a callable held in a field or named in the class body
            # (`cfg.optimizer(params)` with `optimizer = partial(torch.optim.NAdam, lr=...)`)
            attribute = self.attribute_of(receiver, name, node.func, env)
            if attribute.kind in (REF, CLASS, FUNCTION, METHOD, MODULE) or (attribute.kind == OBJECT and attribute.cls):
                return self.call_bound(attribute, node.func, node, args, env)
        if own_move and discarded and self.recording and self.program.returns_moved_copy(receiver.cls, name):
            # `inst.to(self.device)` of a class whose `to()` returns a moved copy: nothing moved
            self.program.facts.discarded_moves.append(
                DiscardedMove(node, Operand(receiver_node, receiver), name, copy_of=receiver.cls))
        if kind == OBJECT:
            # (a method the file defines is read: what it does with its arguments comes back from
            # the call; only what it moves or hands on to other code may have moved)
            self.escape(self.program.method_arguments_it_may_move(receiver, name, args), env)
            if not self.program.defines(receiver.cls, name) and self.program.inherits_unseen(receiver.cls):
                self.forget_fields(receiver, receiver_node, env)
            return self.program.call_method(receiver, name, node, args, self, env)
        if kind == CLASS and self.program.defines(receiver.cls, name):  # `TrainState.from_checkpoint(buf)`
            self.escape(args, env)
            return self.program.call_class_method(receiver, name, node, args, self, env)
        if kind in (TENSOR, BATCH):
            if kind == BATCH:
                handled = self.batch_method(receiver, receiver_node, name, node, args, env, discarded)
                if handled is not None:
                    return handled
            return self.tensor_method(receiver, receiver_node, name, node, args, env, discarded)
        if kind in (LIST, TUPLE) and name in ("append", "extend", "insert"):
            return self.container_add(receiver, receiver_node, name, node, args, env)
        if kind == LIST and receiver.cls == "dict" and receiver.items:
            handled = _dict_view(receiver.items[0], name)
            if handled is not None:
                return handled
        if kind == TOKENIZER:
            return self.tokenizer_call(name, node, args)
        if kind == OPTIMIZER or (kind == ANY and name == "step" and _OPTIMIZER_NAME.search(last_identifier(receiver_node))):
            return self.optimizer_method(receiver, receiver_node, name, node, env)
        if kind == ANY and name == "backward":  # `accelerator.backward(loss)`
            self.note_step(trains=True)
            return Value(kind=HOST)
        if kind == ANY and name == "add_argument":
            self.note_argument_default(node, args)
            return UNKNOWN_VALUE
        if kind == ANY and name in api.NAMESPACE_METHODS:
            # `args = parser.parse_args()`: one object, made here, whose fields a helper may set
            # (`setup(args)` choosing `args.device`); what it holds is not known, but for the devices
            # options default to
            self.program.contexts.heap.allocate(id(node), dict(self.program.argument_devices))
            return Value(ident=id(node))
        if name == "get" and kind in (ANY, LIST, HOST):
            positional = [a for a in args if a.keyword is None and not a.node.star]
            if len(positional) == 2:
                self.note_settings_default(string_value(positional[0].node.value), positional[1], "config default")
        if kind == ANY and name in api.FRAMEWORK_PLACING_METHODS:
            self.escape(args, env)
            return Value(source=SOURCE_DEVICE_AWARE)
        if kind == ANY and name in MODEL_CALL_METHODS:
            result = self.call_value(receiver, receiver_node, node, args, last_identifier(receiver_node), env)
            return model_call_result(receiver, name, result)
        if kind == HOST and receiver.literal is None and not receiver.source and name not in api.MOVE_METHODS \
                and name not in api.NUMPY_SAME_DATA_METHODS:
            return Value(kind=HOST)  # `rng.integers(...)`: host objects make host data
        if kind == HOST and name in api.NUMPY_SAME_DATA_METHODS:
            # `batch.numpy().astype(np.float64)` is still that batch's data (converted: worked on)
            if name in api.NUMPY_WORK_METHODS and receiver.source == SOURCE_LOADER:
                return replace(receiver, host_work=node)
            return receiver
        return UNKNOWN_VALUE

    def optimizer_method(self, receiver: Value, receiver_node, name: str, node: cst.Call, env) -> Value:
        if name == "step":
            self.note_step(trains=True)
            # `if (i + 1) % accumulation == 0: optimizer.step()` is the update step, not a logging
            # interval: what follows it in that branch runs every update
            self.interval_depth = 0
        elif name == "load_state_dict" and receiver.origin is not None and id(receiver.origin) in self.optimizers_left_behind:
            # accelerate's `prepare()`: the model moved, then the optimizer reloads its own state,
            # which lands on the parameters' new device
            stale = self.optimizers_left_behind.pop(id(receiver.origin))
            facts = self.program.facts.optimizers_before_move
            facts[:] = [fact for fact in facts if not any(fact is old for old in stale)]
        elif name == "load_state_dict" and receiver.kind == OPTIMIZER and receiver.device.is_cpu:
            key = dotted_name(receiver_node)
            if key is not None:  # the loaded state lands where the parameters are now: the CPU
                env.values[key] = replace(receiver, state_at=node)
            if receiver.origin is not None:  # the optimizer object itself holds it, whatever names it
                self.program.contexts.heap.optimizer_state.setdefault(id(receiver.origin), node)
        return UNKNOWN_VALUE

    def note_settings_default(self, key: Optional[str], default: Optional[Arg], what: str) -> None:
        """`params.get("device", "cuda")`, `getattr(cfg, "device", "cuda")`, `{"device": "cuda"}`: a
        settings lookup whose fallback needs a GPU."""
        if (key is not None and default is not None and api.is_device_name(key)
                and default.value.kind == DEVICE and default.value.device.kind == UNGUARDED):
            self.record_misuse(default.node.value, ACCELERATOR_DEFAULT, what)

    def note_argument_default(self, node: cst.Call, args: List[Arg]) -> None:
        """`parser.add_argument("--device", default="cuda")`: every run without the flag needs a GPU."""
        default = next((a for a in args if a.keyword == "default"), None)
        if default is not None and default.value.kind == DEVICE and default.value.device.kind == UNGUARDED:
            self.record_misuse(default.node.value, ACCELERATOR_DEFAULT, "argparse default")
        flags = [string_value(a.node.value) or "" for a in args if a.keyword is None]
        destination = next((string_value(a.node.value) for a in args if a.keyword == "dest"), None) \
            or api.argument_destination(flags)
        if destination and default is not None and default.value.literal is not None:
            self.program.argument_defaults[destination] = literal_of(default.value)
        if destination and default is not None and default.value.kind == DEVICE and default.value.device.kind == SELECTED:
            # `--device` defaulting to `"cuda" if torch.cuda.is_available() else "cpu"`: the device a
            # run without the flag uses, which is the one the code is written for
            self.program.argument_devices[destination] = default.value
        action = next((string_value(a.node.value) for a in args if a.keyword == "action"), None)
        on_by_default = action == "store_false" or (default is not None and literal_of(default.value) is True)
        off_by_default = action == "store_true" and (default is None or literal_of(default.value) is False)
        cuda_unless_told = (on_by_default and any(api.is_cuda_flag(flag) for flag in flags)) or \
            (off_by_default and any(api.is_cpu_flag(flag) for flag in flags))
        if cuda_unless_told and self.program.cuda_without_availability:
            # `--cuda` with `action="store_false"` (salesforce/awd-lstm-lm), or a `--no-cuda` / `--cpu`
            # switch that is off unless given (`use_cuda = not args.no_cuda`): CUDA unless told
            # otherwise, in a file that asks for CUDA itself and never asks whether it is there
            # (`"cuda" if use_cuda else "cpu"` is the flag's choice: a run without it needs the GPU)
            self.record_misuse(node, ACCELERATOR_DEFAULT, "argparse switch")

    def move_in_place(self, receiver, receiver_node, name, node, args, env, discarded) -> Value:
        target = self.move_target(name, node, args, env)
        if target is None or (receiver.kind == ANY and receiver.source == SOURCE_DEVICE_AWARE):
            return receiver  # a pipeline or a prepared object places its parts itself
        key = dotted_name(receiver_node)
        if discarded and receiver.kind == ANY and api.is_tensor_name(last_identifier(receiver_node)):
            # `labels.to(device)` on a parameter named like a tensor: tensors do not move in place.
            if self.recording:
                self.program.facts.discarded_moves.append(DiscardedMove(node, Operand(receiver_node, receiver), name))
            return receiver
        moved = receiver.with_device(target, node)
        if receiver.kind == MODULE:
            self.note_optimizers_before_move(receiver, target, node, env)
            self.note_module_move(receiver_node, receiver, node, target)
            if receiver.scatters == "DataParallel" and id(receiver.wrapped_at) in self.program.wrap_device_ids:
                # the wrapper moved after the wrap: its module is now where it goes
                check_device_ids(self, node, Operand(receiver_node, moved),
                                 self.program.wrap_device_ids[id(receiver.wrapped_at)], data_parallel=True,
                                 wrap=receiver.wrapped_at)
        if receiver.ident is not None:
            self.note_moved(receiver.ident, moved, env)
        for ident in receiver.aliases:  # one of several objects (`for m in (enc, dec): m.to(dev)`): a weak update
            self.note_moved(ident, moved, env, weak=True)
        if receiver.kind == MODULE and receiver.ident is None and receiver.owner is not None:
            # a part of a model moved on its own (`getattr(model, name).to(device_map[name])`, a child
            # of `named_children()`): the model is now partly there, and where it is as a whole is unknown
            owner = next((v for v in env.values.values() if v.ident == receiver.owner and v.kind == MODULE), None)
            if owner is not None:
                self.note_moved(receiver.owner, owner.with_device(UNKNOWN), env)
        if key is not None and (receiver.kind == MODULE or discarded):
            env.values[key] = moved
        if receiver.kind == MODULE and isinstance(receiver_node, cst.Attribute):
            self.note_part_moved(receiver_node, moved, target, env)
        return moved

    def note_part_moved(self, part_node: cst.Attribute, moved: Value, target, env) -> None:
        """`self.stage1.to(dev0)` in a method: that object's field is moved for every method that reads
        it, and the object as a whole is now partly there (where it is, is unknown)."""
        owner_key = dotted_name(part_node.value)
        owner = env.get(owner_key) if owner_key is not None else None
        if owner is None or owner.ident is None or owner.kind not in (MODULE, OBJECT):
            return
        self.program.contexts.heap.store(owner.ident, part_node.attr.value, moved, strong=not owner.aliases)
        if owner.kind == MODULE and not same_placement(owner.device, target):
            self.note_moved(owner.ident, owner.with_device(UNKNOWN), env)

    def module_method(self, receiver, receiver_node, name, node, args, env) -> Value:
        answer = MODULE_METHODS.dispatch(ApiCall(name, node, args, env, self, receiver, receiver_node))
        if answer is not None:
            return answer
        if receiver.cls:  # a method of a module class of the file
            return self.program.call_method(receiver, name, node, args, self, env)
        return UNKNOWN_VALUE

    def call_value(self, callee: Value, callee_node, node: cst.Call, args: List[Arg], name: str, env) -> Value:
        """Calling a value: a model, a loss, or something we do not know."""
        if callee.kind == MODULE or (callee.kind == ANY and callee.device.known):
            return self.module_call(callee, callee_node, node, args, "call", env)
        if callee.kind == OBJECT and callee.alternatives:  # one of several objects called
            return join_all([self.call_value(side, callee_node, node, args, name, env) for side in callee.alternatives])
        if callee.kind == OBJECT and callee.cls:  # an object of this file called: its `__call__`
            return self.program.call_method(callee, "__call__", node, args, self, env)
        if callee.kind == ANY and _LOSS_NAME.search(name):
            # a loss known by its name only: its tensor arguments meet; a dict or list of targets
            # may be moved inside it (detection losses take the batch's CPU annotations)
            tensors = [(expr, v) for expr, v in self.inputs_of(args) if v.kind == TENSOR]
            return self.check_operands(node, tensors, f"{name}(...)", arithmetic=False)
        if callee.kind == ANY and _MODEL_NAME.search(name):
            self.note_step(trains=False)
            self.note_model_inputs(self.inputs_of(args), callee_node)
            inputs = [v for _, v in self.inputs_of(args) if placed(v) and not v.device.is_cpu]
            device = inputs[0].device if inputs else UNKNOWN
            return Value(kind=TENSOR, device=device, origin=node)
        if callee.kind not in (FUNCTION, CLASS):
            self.escape(args, env)
        return UNKNOWN_VALUE

    def left_behind_part_called(self, part: Value, part_node, node: cst.Call, operation: str, env) -> Value:
        """`self.fc(x)` in `forward`, where `fc` was replaced by a new CPU module after the model moved:
        the call that fails at run time, reported with the module it was read from."""
        # (read again only when it is a plain name or attribute chain: a call is not evaluated twice)
        plain = isinstance(part_node, cst.Attribute) and dotted_name(part_node.value) is not None
        owner = self.eval(part_node.value, env) if plain else None
        if (owner is not None and owner.kind == MODULE and owner.device.is_accelerator
                and not self.stray_reported(part.stray) and self.first_time("part", part, node)):
            self.program.facts.mismatches.append(DeviceMismatch(
                node, MODEL_CALL, Operand(part_node.value, owner), Operand(part_node, part), operation,
                replaced_by=part.stray))
        return Value(kind=TENSOR, origin=node)

    def stray_reported(self, stray: cst.CSTNode) -> bool:
        """Was the part this assignment left on the CPU reported already (one root cause: a wrapper
        running it on one machine, the bare model calling it on another)?"""
        facts = self.program.facts
        target = stray.targets[0].target if isinstance(stray, cst.Assign) else None
        return (any(m.replaced_by is stray for m in facts.mismatches)
                or any(f.module.node is target for f in facts.parallel_on_cpu))

    def part_reported_inside(self, callee: Value, node: cst.Call, args: List[Arg], env) -> bool:
        """Run the module's own `forward`: did it call the part left behind (reported there, where
        it fails)? Otherwise the call of the whole module reports it."""
        self.program.call_forward(callee, node, args, self, env)
        return any(m.replaced_by is callee.stray and m.node is not node for m in self.program.facts.mismatches)

    def inputs_of(self, args: List[Arg]) -> List[Tuple[cst.CSTNode, Value]]:
        inputs = []
        for arg in args:
            if arg.node.star == "*":
                inputs.append((arg.node.value, self.element_of(arg.value, arg.node.value, arg.node.value)))
            else:
                inputs.append((arg.node.value, arg.value))
        return inputs

    def main_inputs(self, args: List[Arg]) -> List[Tuple[cst.CSTNode, Value]]:
        """The inputs a model surely computes with: the first positional argument,
        `**batch` expansions and input-named keywords. Later positional arguments
        are often CPU metadata on purpose (lengths for packing, grid sizes)."""
        chosen = []
        positional = [a for a in args if a.keyword is None and not a.node.star]
        if positional:
            chosen.append(positional[0])
        chosen += [a for a in args if a.node.star == "**" or a.keyword in _INPUT_KEYWORDS
                   or (a in positional[1:] and _STATE_NAME.search(last_identifier(a.node.value)))]
        return [(a.node.value, a.value) for a in chosen]

    def module_call(self, callee: Value, callee_node, node: cst.Call, args: List[Arg], operation: str, env=None) -> Value:
        if callee.alternatives:  # each side of an availability split runs on its own machines
            return join_all([self.module_call(side, callee_node, node, args, operation, env)
                             for side in callee.alternatives])
        inputs = self.inputs_of(args)
        if callee.stateful is not False:
            self.note_step(trains=False)
            self.note_model_inputs(inputs, callee_node)
        if callee.scatters == "DataParallel" and callee.device.is_cpu:
            if self.first_time("parallel", callee, node):
                self.program.facts.parallel_on_cpu.append(ParallelOnCpu(node, Operand(callee_node, callee), "DataParallel"))
            return Value(kind=TENSOR, origin=node)  # reported here: what it returns is no new root cause
        own_forward = env is not None and operation in ("call", "forward") and callee.cls in self.program.classes
        if callee.stray is not None and callee.kind == MODULE and callee.device.is_cpu and env is not None:
            return self.left_behind_part_called(callee, callee_node, node, operation, env)
        part = replaced_part(callee)
        if part is not None:
            if callee.scatters and callee.scatters != OWN_FORWARD_MOVES:
                if not self.stray_reported(callee.stray) and self.first_time("part", callee, node):
                    self.program.facts.parallel_on_cpu.append(ParallelOnCpu(node, part, callee.scatters))
            elif not (own_forward and self.part_reported_inside(callee, node, args, env)) and self.first_time("part", callee, node):
                self.program.facts.mismatches.append(DeviceMismatch(
                    node, MODEL_CALL, Operand(callee_node, callee), part, operation, replaced_by=callee.stray))
            return Value(kind=TENSOR, origin=node)  # reported: what it returns is no new root cause
        if callee.stateful is False and not own_forward:  # a loss or activation module: its inputs meet each other
            if callee.cls in api.HOST_TARGET_LOSSES:
                inputs = inputs[:1]
            # (a dict or list of targets written at the call is taken apart inside: `{"semantic_mask": m}`)
            inputs = [(expr, v) for expr, v in inputs if not isinstance(expr, _LITERAL_CONTAINERS)]
            label = dotted_name(callee_node) if isinstance(callee_node, (cst.Name, cst.Attribute)) else None
            return self.check_operands(node, inputs, f"{label}(...)" if label else operation, arithmetic=False)
        device = callee.device
        reported: Set[int] = set()
        moves_input = own_forward and self.program.moves_own_input(self.program.classes[callee.cls])
        if device.known and not callee.scatters and not moves_input and callee.stateful is not False:
            checked = inputs if callee.cls in api.RECURRENT_NN_CLASSES else self.main_inputs(args)
            for expr, whole in checked:
                if own_forward and isinstance(expr, _LITERAL_CONTAINERS):
                    continue  # `model([{"image": img}])`: its own `forward` takes the inputs apart and moves them
                # (an (h0, c0) pair is one input; so is a state that is a tensor or a pair, by the RNN's type)
                parts = (whole.items if whole.kind == TUPLE else
                         whole.alternatives if whole.kind == ANY and whole.alternatives else (whole,))
                wrong = [v for v in parts if placed(v) and conflicts(device, v.device) and v.scalar is not True]
                if wrong:
                    reported.add(id(expr))
                    self.record_mismatch(node, MODEL_CALL, Operand(callee_node, callee), Operand(expr, wrong[0]), operation)
                    if device.is_cpu:
                        device = UNKNOWN  # a model left on the CPU: its outputs are no new root cause
        if env is not None and operation in ("call", "forward") and callee.cls:
            # An input on the wrong device was reported here: inside `forward` it is taken to be where
            # the module is, so that one root cause gives one finding and the body is still checked.
            # The other arguments reach `forward` as they are (a CPU `voice` it concatenates).
            if reported:
                # (a batch expanded with `**` is moved as a whole: its keys' values go with it)
                args = [Arg(a.node, a.value.with_device(callee.device) if a.value.kind == BATCH
                            else replace(a.value, device=callee.device)) if id(a.node.value) in reported else a
                        for a in args]
            result = self.program.call_forward(callee, node, args, self, env)
            if result is not None and reported and callee.device.is_cpu and result.kind in (TENSOR, BATCH):
                # a model left on the CPU was reported here: its outputs are no new root cause
                return Value(kind=TENSOR, origin=node)
            if result is not None and (result.kind in (TUPLE, LIST, BATCH, OBJECT) or result.device.known):
                # what this module's own `forward` returns for these inputs; for messages, a tensor
                # got its device at this call
                # (a plain tensor attribute handed out keeps its own origin: DEV105 reports it where it
                # is stored, once it meets the module's device)
                if result.kind == TENSOR and result.source != SOURCE_UNREGISTERED:
                    return replace(result, origin=node, via=None)
                return result
            if result is not None and result.kind == TENSOR and not device.known and callee.stateful is not False:
                # its `forward` ran and cannot say where the output is (a pipeline over several GPUs):
                # unknown, not guessed from the inputs
                return Value(kind=TENSOR, origin=node)
        if not device.known or callee.stateful is False:  # (a module without weights computes where its inputs are)
            accelerated = [v for _, v in inputs if placed(v) and not v.device.is_cpu]
            device = accelerated[0].device if accelerated else UNKNOWN
        shaped = callee.cls not in self.program.classes and api.nn_output_is_shaped(callee.cls)
        return Value(kind=TENSOR, device=device, origin=node, scalar=False if shaped else None)

    def tensor_method(self, receiver, receiver_node, name, node, args, env, discarded) -> Value:
        if receiver.cls == DISTRIBUTION and name not in api.DISTRIBUTION_OPERAND_METHODS:
            # only densities are followed: samples are mostly drawn to act on the host (an
            # environment's step), where syncing each one is the point
            return UNKNOWN_VALUE
        answer = TENSOR_METHODS.dispatch(ApiCall(name, node, args, env, self, receiver, receiver_node, discarded))
        if answer is not None:
            return answer
        return computed_on(receiver)  # any other method computes on the receiver

    def batch_method(self, receiver, receiver_node, name, node, args, env, discarded) -> Optional[Value]:
        element = Value(kind=TENSOR, device=receiver.device, origin=receiver.origin, via=receiver.via, source=receiver.source,
                        stored=receiver.stored, scalar=False if receiver.source or receiver.scalar is False else None,
                        parameter=receiver.parameter, owner=receiver.owner)
        if name in api.MOVE_METHODS:
            target = self.move_target(name, node, args, env)
            if target is None:
                return receiver
            self.note_tensor_move(receiver_node, receiver, node, target, args)
            moved = Value(kind=BATCH, device=target, origin=node, in_place_move=receiver.in_place_move)
            key = dotted_name(receiver_node)
            if (receiver.in_place_move or discarded) and key is not None:
                env.values[key] = moved  # BatchEncoding.to() and friends move in place and return self
            return moved
        viewed = _dict_view(element, name)
        if viewed is not None:
            return viewed
        if name == "keys":
            return Value(kind=HOST)
        if name in ("append", "extend"):
            return self.container_add(receiver, receiver_node, name, node, args, env)
        return None

    def container_add(self, receiver, receiver_node, name, node, args, env) -> Value:
        if not args:
            return Value(kind=HOST)
        added = args[-1].value
        if name == "extend":
            added = self.element_of(added, args[-1].node.value, node)
        if self.scope.in_module_init:
            self.program.note_container_append(self, receiver, receiver_node, added, node)
        self.grow_container(receiver, receiver_node, added, env)
        return Value(kind=HOST)

    def grow_container(self, receiver: Value, receiver_node, added: Value, env) -> None:
        """`xs.append(v)`, `d[k] = v`: the container may now hold `v` too (a weak update of its element)."""
        if isinstance(receiver_node, cst.IfExp):  # `(no_decay if p.ndim == 1 else decay).append(p)`: either one
            for side in (receiver_node.body, receiver_node.orelse):
                held = env.get(dotted_name(side)) if dotted_name(side) is not None else None
                if held is not None and held.kind in (LIST, TUPLE):
                    self.grow_container(held, side, added, env)
            return
        key = dotted_name(receiver_node)
        if key is not None:
            existing = []
            if receiver.kind == BATCH:
                existing = [Value(kind=TENSOR, device=receiver.device, origin=receiver.origin, via=receiver.via, source=receiver.source,
                                  parameter=receiver.parameter, owner=receiver.owner)]  # (parameters stay their module's)
            elif receiver.items:
                existing = list(receiver.items) if receiver.kind == TUPLE else [receiver.items[0]]
            updated = container_of(existing + [added], receiver.cls or "list")
            env.values[key] = collected_at(updated, receiver.origin, receiver.via)

    def tokenizer_call(self, name: str, node: cst.Call, args: List[Arg]) -> Value:
        returns_tensors = any(a.keyword == "return_tensors" for a in args)
        if not returns_tensors:
            return Value(kind=HOST)
        if name == "encode":
            return Value(kind=TENSOR, device=CPU, origin=node, source=SOURCE_TOKENIZER, scalar=False)
        if name in _TOKENIZER_BATCH_METHODS:
            return Value(kind=BATCH, device=CPU, origin=node, source=SOURCE_TOKENIZER, in_place_move=True)
        return UNKNOWN_VALUE












def _dict_view(element: Value, name: str) -> Optional[Value]:
    """`d.items()`, `d.values()`, `d.get(k)` of a dict (or a batch of named tensors) whose values
    are all like `element`."""
    if name == "items":
        return Value(kind=LIST, items=(Value(kind=TUPLE, items=(Value(kind=HOST), element)),))
    if name == "values":
        return Value(kind=LIST, items=(element,))
    if name in ("get", "pop"):
        return element
    return None


def _held_optimizers(values, module: int) -> List[Value]:
    """The optimizers on `module`'s parameters among `values` and the containers they are
    (`{"G": Adam(g.parameters()), "D": Adam(d.parameters())}`), a bounded look."""
    found, stack, budget = [], list(values), 256
    while stack and budget:
        value = stack.pop()
        budget -= 1
        if value.kind == OPTIMIZER:
            if value.ident == module or module in value.aliases:
                found.append(value)
        else:
            stack.extend(value.items)
    return found


def _gives_a_module(arg: Arg) -> bool:
    """A module, or a value the analysis does not know that is passed as one (`model=self.model`)."""
    if arg.value.kind == MODULE:
        return True
    name = arg.keyword or last_identifier(arg.node.value)
    return arg.value.kind == ANY and not arg.value.device.known and bool(_MODEL_NAME.search(name))


def forget_assumed_gpu(qualname: str, env) -> None:
    """Code this analysis cannot see ran (`Accelerator()`, `deepspeed.initialize(...)`): it may have
    chosen the current GPU, so "still GPU 0, as when the process started" no longer holds. The
    standard library and the builtins choose none."""
    if env.current_gpu is not None and env.current_gpu.assumed and not api.is_standard_library(qualname):
        env.current_gpu = None


#: Methods of `list` that put an element in it.
_SEQUENCE_GROWERS = frozenset({"append", "extend", "insert"})


def _is_super(node) -> bool:
    """`super()` (or `super(Cls, self)`): a call of the base class's method comes next."""
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "super"
