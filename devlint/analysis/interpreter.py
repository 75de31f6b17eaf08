"""The flow-sensitive abstract interpreter over one function body (or a module).

Statements are walked in order; branches are interpreted on copies of the
state and joined; loops are iterated to a fixpoint *silently* and then walked
once more to record facts, so every fact describes the loop's stable state.
Call semantics (the torch API, modules, local functions) live in `calls.py`.
"""
from __future__ import annotations

import re
from dataclasses import replace
from typing import AbstractSet, Dict, List, Optional, Sequence, Tuple

import libcst as cst

from . import torch_api as api
from .declarations import ClassInfo, ProgramServices
from .call_args import Arg
from .calls import CallEvaluator
from .device_choice import PER_RANK, DeviceChoiceTracker, environment_key
from .env import Env, join_envs
from .facts import AVAILABILITY_NOT_CALLED, ApiMisuse, Operand, WrapperAttribute
from .hot_path import GENERATING, TRAINING, HotPathTracker
from .lattice import (
    ACCELERATOR_PATH, ANY, BATCH, BOTH_SIDES, CPU_KIND, CUDA, CurrentGpu, DATASET, DEVICE, FUNCTION, HOST, HOST_PATH, LIST,
    LOADER, META, MODULE, MPS, OBJECT, OPAQUE_VALUE, OPTIMIZER, REF, SEVERAL_PATH, SOURCE_AVAILABILITY, SOURCE_DEVICE_AWARE,
    SOURCE_CREATED, SOURCE_DEVICE_TYPE, SOURCE_FACTORY, SOURCE_LOADER, SOURCE_MIXED, SOURCE_OPAQUE, SOURCE_STEP,
    STEP_SAMPLE, TENSOR, TUPLE, UNKNOWN, UNKNOWN_VALUE, XPU, Value, collected_at, conflicts, container_of, current_gpu_after, join_all,
    join_values, key_of, keyed_dict, surely_not_none, tensor_side,
)
from .hot_path import few_constants, is_interval_test
from .project import PROJECT_SOURCE, absolute_import
from .names import (
    child_nodes, dotted_name, integer_value, isinstance_types, last_identifier, statements_in, string_value, sub_expressions,
    walk,
)
from .registries import stores_of
from .rebound_fields import may_be_rebound
from .value_queries import is_move_call


MAX_LOOP_ITERATIONS = 4
#: A test or loop that names one of these depends on the device (`if args.cuda:`,
#: `if x.device.type == "cuda":`, `for i in range(torch.cuda.device_count()):`), or on a
#: distributed setup the user chose (`if not is_dist_avail_and_initialized(): return`).
_DEVICE_FLAG = re.compile(r"cuda|gpu|accel|mps|xpu|npu|device|avail|distributed|dist_|_dist\b", re.IGNORECASE)
_EXITS = frozenset({"sys.exit", "exit", "quit", "os._exit"})
_EXPECTS_FAILURE = frozenset({"raises", "assertRaises", "assertRaisesRegex"})
_CONSTANTS = {"True": True, "False": False, "None": None}
_UNCALLED = "uncalled:"  # the `cls` of an availability function used without being called
#: Longer strings are text, not options: they are not kept as literals (nor in call contexts).
_LITERAL_TEXT = 32
_LITERAL_TESTS = {
    "Equal": lambda a, b: a == b, "NotEqual": lambda a, b: a != b,
    "Is": lambda a, b: a is b, "IsNot": lambda a, b: a is not b,
    "In": lambda a, b: isinstance(a, str) and isinstance(b, str) and a in b,
    "NotIn": lambda a, b: isinstance(a, str) and isinstance(b, str) and a not in b,
}



class Scope:
    """Where the interpreter runs: module level, a function, or a method."""

    def __init__(self, owner: Optional[ClassInfo] = None, method: str = "", outer: Sequence[Env] = (),
                 parameters: frozenset = frozenset(), node: Optional[cst.FunctionDef] = None,
                 builds: bool = False) -> None:
        self.owner = owner
        self.method = method
        self.builds = builds  # a builder method (`self._create_parameters()` from `__init__`)
        self.node = node  # the function, when it is one
        self.outer = list(outer)
        self.parameters = parameters

    @property
    def in_module_init(self) -> bool:
        return self.owner is not None and bool(self.owner.is_module) and (self.method == "__init__" or self.builds)


class Interpreter(CallEvaluator, HotPathTracker, DeviceChoiceTracker):
    def __init__(self, program: ProgramServices, scope: Scope, hot: str = "") -> None:
        self.program = program
        self.scope = scope
        self.silent = 0
        self.loop_depth = 0
        self.returns: List[Value] = []
        self.returns_guarded = False     # a return sits under an availability test: the results are a choice
        self.return_paths: List[str] = []  # the availability path of each return
        #: the current GPU at each return, with its availability path: the call's effect on it
        self.return_gpus: List[Tuple[Optional[CurrentGpu], str]] = []
        self.yields: List[Value] = []      # what a generator yields
        self.frames = []
        self.made_here = set()
        self.made_by_callers: Tuple[AbstractSet[int], ...] = ()  # what the callers' step made before this call
        self.pinning_asked = 0  # inside `if <pin option>:`
        self.interval_depth = 0          # inside `if step % N == 0:` and the like
        self.collecting = 0              # inside the arguments of `results.append(...)`
        self.deciding = 0                # inside a test whose branch leaves the loop
        #: `if h.dtype == torch.float16 and torch.isinf(h).any():` the last such `and` evaluated, with
        #: its right operand: a test of a tensor's own properties is a mode of the data, not a
        #: switch, so where the test is a branch's the right operand is read every time in that mode
        self.tested_operand: Optional[Tuple[cst.CSTNode, cst.BaseExpression, Value]] = None
        self.stepped = self.trained = False  # a model was called / trained here (an effect for callers)
        self.encloses = False                # ... inside a loop of this function
        self.moves: List[tuple] = []     # (object, value after the move, weak): in-place moves, effects of a call
        self.cuda_initialised = None     # the first statement that started CUDA
        self.chosen_device = ""          # a device variable this scope placed things on
        self.unguarded_cuda_calls: List[cst.CSTNode] = []  # settled when the scope is done
        #: optimizer (by the node that built it) -> its DEV203/DEV204 facts this run recorded at a
        #: move: a `load_state_dict` after the move puts the state where the parameters are now
        self.optimizers_left_behind: Dict[int, list] = {}
        self.parameter_names = scope.parameters
        if hot:  # a function called from a hot loop runs every step too
            self.enter_hot_function(trains=hot == TRAINING, generates=hot == GENERATING)

    # --- facts ------------------------------------------------------------

    @property
    def recording(self) -> bool:
        return self.silent == 0

    @property
    def in_hot_code(self) -> bool:
        """Inside a loop or a `forward` of this function: where DEV103 looks for factories. A helper
        called from a loop makes its tensors once per call; what it returns is reported as created there."""
        return self.loop_depth > 0 or self.scope.method == "forward"

    # --- names --------------------------------------------------------------

    def lookup(self, key: str, env: Env) -> Optional[Value]:
        value = env.get(key)
        if value is not None:
            return value
        for outer in self.scope.outer:
            value = outer.get(key)
            if value is not None:
                return value
        return None

    # --- statements ---------------------------------------------------------

    def exec_block(self, body: Sequence[cst.CSTNode], env: Env) -> Env:
        depth = self.interval_depth
        try:
            for statement in body:
                if env.dead:
                    break
                env = self.exec_statement(statement, env)
                if _skips_rest_off_interval(statement):
                    # `if step % log_every != 0: return`: what follows runs once per interval
                    self.interval_depth += 1
        finally:
            self.interval_depth = depth
        return env

    def exec_suite(self, suite: cst.BaseSuite, env: Env) -> Env:
        return self.exec_block(suite.body, env)

    def exec_statement(self, node: cst.CSTNode, env: Env) -> Env:
        self.program.contexts.spend()
        return env.take(self._exec_statement(node, env))

    def _exec_statement(self, node: cst.CSTNode, env: Env) -> Env:
        if isinstance(node, cst.SimpleStatementLine):
            for small in node.body:
                if env.dead:
                    break
                self.exec_small(small, env)
            return env
        if isinstance(node, cst.BaseSmallStatement):  # the body of `if flag: y = f(x)`, `def f(): return x`
            self.exec_small(node, env)
            return env
        if isinstance(node, cst.If):
            return self.exec_if(node, env)
        if isinstance(node, cst.For):
            return self.exec_for(node, env)
        if isinstance(node, cst.While):
            return self.exec_while(node, env)
        if isinstance(node, (cst.Try, getattr(cst, "TryStar", cst.Try))):
            return self.exec_try(node, env)
        if isinstance(node, cst.With):
            return self.exec_with(node, env)
        if isinstance(node, cst.FunctionDef):
            declared = self.program.declare_function(node, self.scope, env)
            env.bind(node.name.value, declared)
            self.register_decorated(node, declared, env)
            return env
        if isinstance(node, cst.ClassDef):
            declared = self.program.declare_class(node, self.scope, env)
            env.bind(node.name.value, declared)
            self.register_decorated(node, declared, env)
            return env
        if isinstance(node, getattr(cst, "Match", ())):
            return self.exec_match(node, env)
        return env

    def register_decorated(self, node, declared: Value, env: Env) -> None:
        """`@register_model("mlp") class MLP`, `@register_model def resnet50(...)`: the registries its
        decorators fill now hold the class or function."""
        for decorator in node.decorators:
            called = isinstance(decorator.decorator, cst.Call)
            target = decorator.decorator.func if called else decorator.decorator
            function = self.eval(target, env)
            if function.kind != FUNCTION or not isinstance(function.origin, cst.FunctionDef):
                continue
            for registry in stores_of(function.origin, called):
                held = env.get(registry.value)
                if held is not None and held.kind == LIST and held.cls == "dict":
                    self.grow_container(held, registry, declared, env)

    def exec_small(self, node: cst.BaseSmallStatement, env: Env) -> None:
        if isinstance(node, cst.Expr):
            value = node.value
            if isinstance(value, cst.Call):
                self.eval_call(value, env, discarded=True)
            elif isinstance(value, cst.BinaryOperation):
                self.eval_dropped_operation(value, env)
            else:
                self.eval(value, env)
        elif isinstance(node, cst.Assign):
            value = self.eval(node.value, env)
            for target in node.targets:
                self.assign(target.target, value, env, node)
        elif isinstance(node, cst.AnnAssign):
            if node.value is not None:
                self.assign(node.target, self.eval(node.value, env), env, node)
        elif isinstance(node, cst.AugAssign):
            left = self.eval(node.target, env)
            right = self.eval(node.value, env)
            if (left.kind in (LIST, TUPLE) and left.cls == "list" and right.kind in (LIST, TUPLE, BATCH)
                    and isinstance(node.operator, cst.AddAssign) and dotted_name(node.target) is not None):
                # `groups += [{"params": [p], "lr": lr}]`: the list may hold those items now
                for item in (right.items if right.kind == TUPLE else (self.element_of(right, node.value, node.value),)):
                    left = self.eval(node.target, env)
                    self.grow_container(left, node.target, item, env)
                return
            result = self.binary(node, node.target, left, node.value, right, _operator_text(node.operator), env)
            if left.kind == TENSOR and left.parameter and result.kind == TENSOR:
                # `self.x_min -= 1e-5` works in place: the buffer (or parameter) stays what it was
                result = replace(left, scalar=result.scalar)
            self.assign(node.target, result, env, node)
        elif isinstance(node, cst.Return):
            self.returns.append(self.eval(node.value, env) if node.value is not None else Value(kind=HOST))
            self.returns_guarded |= env.guarded
            self.return_paths.append(env.path)
            self.return_gpus.append((env.current_gpu, env.path))
            env.dead = True
        elif isinstance(node, cst.Raise):
            if node.exc is not None:
                self.eval(node.exc, env)
            env.dead = True
        elif isinstance(node, cst.Import):
            for alias in node.names:
                qualname = dotted_name(alias.name) or ""
                if alias.asname is not None:
                    env.bind(alias.asname.name.value, Value(kind=REF, cls=qualname))
                else:
                    head = qualname.split(".", 1)[0]
                    env.bind(head, Value(kind=REF, cls=head))
        elif isinstance(node, cst.ImportFrom):
            self.exec_import_from(node, env)
        elif isinstance(node, cst.Assert):
            if self.truth_test(self.eval(node.test, env)).source == SOURCE_AVAILABILITY:
                env.guarded = True  # `assert torch.cuda.is_available()`
        elif isinstance(node, cst.Del):
            pass

    def exec_import_from(self, node: cst.ImportFrom, env: Env) -> None:
        target = dotted_name(node.module) if node.module is not None else ""
        place = self.program.place
        if node.relative:
            base = absolute_import(place.module, place.is_package, len(node.relative), target or "") if place.module else None
            base = base or "local"  # a relative import we cannot place: names of this project, unknown
        else:
            base = target or ""
        if isinstance(node.names, cst.ImportStar):
            return
        for alias in node.names:
            name = dotted_name(alias.name) or ""
            local = alias.asname.name.value if alias.asname is not None else name
            qualname = f"{base}.{name}" if base else name
            env.bind(local, place.value(qualname, alias) or Value(kind=REF, cls=qualname))

    def exec_if(self, node: cst.If, env: Env) -> Env:
        # A test whose branch leaves the loop (early stopping, a NaN check that raises) needs the
        # value on the host: that sync is the point of the code, not a stall. A `return` leaves only
        # a loop of this function: in a step function called every batch it skips that batch, and
        # the caller's loop goes on (`if torch.isnan(loss): return` syncs every step).
        own_loop = bool(self.frames) and self.frames[-1].key is not None
        deciding = 1 if self.frames and _leaves(node.body, returns=own_loop) else 0
        self.deciding += deciding
        try:
            test = self.truth_test(self.eval(node.test, env))
            self.note_test_sync(node.test, test, "if")
        finally:
            self.deciding -= deciding
        if test.literal is not None and test.source != SOURCE_AVAILABILITY and not self.reads_rebound_fields(node.test):
            # `if as_tensor:` with `as_tensor=True` bound by the call: only one branch runs
            if test.literal[0]:
                return self.exec_then(node, env)
            if isinstance(node.orelse, cst.If):
                return self.exec_if(node.orelse, env)
            if isinstance(node.orelse, cst.Else):
                return self.exec_suite(node.orelse.body, env)
            return env
        split = self.is_device_choice(node.test, test, env)
        # `if torch.cuda.device_count() > 1:` picks between several GPUs and one (or none): the
        # other side runs on single-GPU machines too, so both sides are checked as they are
        several = split and _needs_several_devices(node.test)
        then_env = env.copy()
        else_env = env.copy()
        for name in narrowed(node.test, api.HOST_TYPES):  # `if isinstance(a, np.ndarray):` a is no tensor there
            if then_env.get(name) is not None:
                then_env.values[name] = Value(kind=HOST)
        self.narrow_wrapped(node.test, then_env, else_env)
        flag = self.narrow_flag(node.test, then_env, else_env)
        for name, side in _tested_on_cuda(node.test):  # `if buf.is_cuda: ... else:` buf is off CUDA there
            off = (then_env, else_env)[side]
            value = off.get(name)
            if value is not None and value.kind in (TENSOR, BATCH) and value.device.known and not value.device.is_cpu:
                off.values[name] = replace(value, device=UNKNOWN)
        failed = narrowed(node.test, api.TENSOR_TYPES) if isinstance(node.test, cst.Call) else []
        for name in failed:  # where it holds, an unknown x is a tensor (of an unknown device)
            if then_env.get(name) is not None and then_env.values[name].kind == ANY:
                then_env.values[name] = tensor_side(then_env.values[name]) or Value(kind=TENSOR)
        for name in failed:  # where `isinstance(x, torch.Tensor)` fails, x is no tensor
            if else_env.get(name) is not None and else_env.values[name].kind in (TENSOR, BATCH):
                else_env.values[name] = UNKNOWN_VALUE
        accelerated = None
        if split:
            then_env.guarded = else_env.guarded = True
            accelerated = host_side_first(node.test)
            if not several and (_names_a_device(node.test) or _asks_cuda_capability(node.test)):
                # `if t.device != torch.device("cuda"): t = t.to("cuda")`: the side where the test says
                # "not on the accelerator" runs on machines without one, and is no guard for it
                (then_env, else_env)[1 - accelerated].guarded = env.guarded
            then_env.path, else_env.path = (ACCELERATOR_PATH, HOST_PATH) if accelerated == 0 else (HOST_PATH, ACCELERATOR_PATH)
            if several:
                then_env.path, accelerated = SEVERAL_PATH, BOTH_SIDES
        heap = self.program.contexts.heap
        outer = heap.begin_branch()
        then_env = self.exec_then(node, then_env)
        then_fields = heap.end_branch(outer)
        outer = heap.begin_branch()
        if isinstance(node.orelse, cst.If):
            else_env = self.exec_if(node.orelse, else_env)
        elif isinstance(node.orelse, cst.Else):
            else_env = self.exec_suite(node.orelse.body, else_env)
        else_fields = heap.end_branch(outer)
        # (`if is_torch_available(): self.torch = torch else: self.torch = None`: the object's field
        # holds either, not the last one stored)
        heap.join_branches((then_fields, else_fields), lambda a, b: join_values(a, b, split))
        joined = join_envs(then_env, else_env, split, accelerated)
        joined.path = env.path
        if flag is not None:
            # after the branch the flag is what it was (an availability test still), unless a branch set it
            key, original, decided = flag
            if all(side.dead or side.values.get(key) is value for side, value in zip((then_env, else_env), decided)):
                joined.values[key] = original
        if split and not (then_env.dead or else_env.dead):
            joined.guarded = env.guarded  # the guard covers the branches, not what follows them
        return joined

    def steps_optimizer(self, suite: cst.BaseSuite, env: Env) -> bool:
        """Does a block step an optimizer (`optimizer.step()`, `scaler.step(optimizer)`)?"""
        for call in _step_calls(suite):
            operands = [call.func.value] + [arg.value for arg in call.args]
            if any(isinstance(expr, (cst.Name, cst.Attribute)) and self.eval(expr, env).kind == OPTIMIZER
                   for expr in operands):
                return True
        return False

    def replaced_buffer(self, key: str, value: Value, owner: Optional[Value], statement: cst.CSTNode) -> Value:
        """`self.confmat = torch.zeros(n, n)` in a method (a metric's `reset`): the tensor becomes the
        registered buffer, but where it was made, not where the module was moved; the module's next
        move takes it along."""
        info = self.scope.owner
        if (owner is None or owner.kind != MODULE or owner.ident is None or info is None or self.scope.in_module_init
                or not key.startswith("self.") or key[len("self."):] not in info.buffers
                or value.kind != TENSOR or not value.device.known or value.parameter):
            return value
        return replace(value, parameter=True, owner=owner.ident, stray=statement)

    def note_test_sync(self, test: cst.BaseExpression, value: Value, how: str) -> None:
        """A branch's test is read on the host: its value, and the tensor an `and` tests once the
        tensor's own properties allow (`h.dtype == torch.float16 and torch.isinf(h).any()`)."""
        self.note_sync(test, value, test, how)
        tested, self.tested_operand = self.tested_operand, None
        if tested is not None and tested[0] is test:
            self.note_sync(tested[1], tested[2], test, how)

    def narrow_wrapped(self, test: cst.BaseExpression, then_env: Env, else_env: Env) -> None:
        """`model(x) if isinstance(model, nn.DataParallel) else model(x.to(device))`, `model.module if
        hasattr(model, "module") else model`: a model wrapped on one side of a split is the wrapper
        where the test holds and the bare module where it fails."""
        for expr, holds in wrapper_tests(test, self.program.wrapper_predicates):
            key = dotted_name(expr)
            if key is None:  # (a call is not evaluated twice)
                continue
            value = self.eval(expr, then_env)
            if value.kind != MODULE or not value.alternatives:
                continue
            wrapped = [side for side in value.alternatives if side.wrapped_at is not None]
            bare = [side for side in value.alternatives if side.wrapped_at is None]
            wrapped_env, bare_env = (then_env, else_env) if holds else (else_env, then_env)
            if wrapped:
                wrapped_env.values[key] = wrapped[0]
            # (the accelerator's side alone is wrapped: where the test fails, it is the other side)
            bare_env.values[key] = bare[0] if bare else replace(value, alternatives=())

    def narrow_flag(self, test: cst.BaseExpression, then_env: Env, else_env: Env) -> Optional[tuple]:
        """`if self.on_gpu: ... else: self.cpu_train(model)`: a flag tested on its own is true on one
        side and false on the other, so what each side calls sees it decided (Lightning's trainer
        testing `self.on_gpu` again inside the loop both paths share)."""
        holds = True
        while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            test, holds = test.expression, not holds
        key = dotted_name(test) if isinstance(test, (cst.Name, cst.Attribute)) else None
        value = then_env.get(key) if key is not None else None
        if value is None or value.kind != HOST or value.literal is not None:
            return None
        decided = (Value(kind=HOST, literal=(holds,), origin=value.origin),
                   Value(kind=HOST, literal=(not holds,), origin=value.origin))
        then_env.values[key], else_env.values[key] = decided
        return key, value, decided

    def note_wrapper_attribute(self, base: Value, attr: str, node: cst.CSTNode,
                               model: Optional[cst.BaseExpression] = None,
                               fallback: Optional[cst.BaseExpression] = None) -> None:
        """`model.config` read through a DataParallel/DDP wrapper, or `model.module` read where the model
        may be the bare module: AttributeError on the machines that take that path. `getattr(model,
        "config")` is the same read; with a `fallback` it raises nothing and gives the fallback there."""
        if model is None and isinstance(node, cst.Attribute):
            model = node.value
        if not self.recording or attr.startswith("_") or model is None:
            return
        sides = base.alternatives or (base,)
        wrapped = [side for side in sides if side.wrapped_at is not None]
        if not wrapped or any(self.program.parallel_base(side.cls, self) is not None and self.program.defines(side.cls, attr)
                              for side in wrapped):
            return  # (a wrapper class of this file that defines it: `MMDataParallel.val_step`)
        if all((id(side.wrapped_at), attr) in self.program.wrapper_fields for side in wrapped):
            return  # (set on the wrapper itself: yolov5's `model.hyp = hyp` after the DDP wrap)
        if fallback is not None:
            # a probe with a fallback is a mistake only for what the module itself surely has
            # (`getattr(model, "module", model)` unwraps; `getattr(model, "no_sync", None)` asks)
            bare = [side for side in sides if side.wrapped_at is None] or [base]
            if attr == api.WRAPPED_MODULE_ATTRIBUTE or not all(
                    side.cls in self.program.classes and not self.program.lacks_attribute(side.cls, attr) for side in bare):
                return
        if attr == api.WRAPPED_MODULE_ATTRIBUTE:
            bare = [side for side in sides if side.wrapped_at is None]
            # (one side alone means only the accelerator's path wraps: elsewhere it is bare)
            if not bare and len(base.alternatives) != 1:
                return
            if not self.program.lacks_attribute((bare[0] if bare else base).cls, attr):
                return
            lacking = "bare"
        elif attr in (api.DATA_PARALLEL_OWN_ATTRIBUTES if all(side.scatters == "DataParallel" for side in wrapped)
                      else api.WRAPPER_OWN_ATTRIBUTES):
            return
        else:
            lacking = "wrapper"
        if self.first_time("wrapper-attribute", base, node):
            self.program.facts.wrapper_attributes.append(
                WrapperAttribute(node, Operand(model, base), attr, lacking, wrapped[0].wrapped_at, fallback))

    def is_device_choice(self, test: cst.BaseExpression, value: Value, env: Env) -> bool:
        """Does this test choose between an accelerator and the CPU?"""
        if value.source == SOURCE_AVAILABILITY:
            return True
        if isinstance(test, cst.Call) and isinstance(test.func, cst.Name) and not test.args:
            callee = self.lookup(test.func.value, env)
            info = self.program.functions.get(id(callee.origin)) if callee is not None and callee.kind == FUNCTION else None
            if info is not None and not mentions_device(info.node.body):
                # a function of this file that names no device says by what it returns, not by its
                # name: transformers' `is_torch_available()` asks whether torch imports, not whether
                # a GPU is there
                return False
        return mentions_device(test)

    def exec_loop_body(self, env: Env, run_once, loop: cst.CSTNode, target: Optional[cst.BaseExpression] = None,
                       over_loader: bool = False, over_tensor: bool = False, over_constants: bool = False) -> Env:
        """Iterate `run_once(env) -> env` to a fixpoint, then once more recording facts."""
        head = env.copy()
        self.loop_depth += 1
        frame = self.push_frame(target, over_loader, id(loop), loop)
        frame.over_tensor, frame.over_constants = over_tensor, over_constants

        def iteration(state: Env) -> Env:
            frame.assigned = set()  # what this iteration has bound so far; the rest is carried in
            frame.carried = set()
            return run_once(state)

        try:
            return self._fixpoint(head, iteration)
        finally:
            self.loop_depth -= 1
            self.frames.pop()

    def _fixpoint(self, head: Env, run_once) -> Env:
        # The first iteration runs on the state the loop is entered with: what it finds is sure
        # (`idx` is the CPU prompt the first time `model(idx)` runs, whatever the loop makes of it
        # later), so it records, placement facts included. The other iterations only widen.
        entry, relocations = head, self.program.contexts.heap.relocations
        after = run_once(head.copy())
        widened = join_envs(head, after)
        if _moves_between_iterations(entry, after) or self.program.contexts.heap.relocations != relocations:
            # the second iteration is as sure as the first when the first left something on another
            # device (a buffer a metric's `reset()` put back on the CPU, a state carried on): it
            # records too, before the join blurs the two
            widened = join_envs(widened, run_once(after.copy()))
        self.silent += 1
        try:
            for _ in range(MAX_LOOP_ITERATIONS - 1):
                if widened == head:
                    break
                head = widened
                after = run_once(head.copy())
                widened = join_envs(head, after)
            else:
                head = _widen(head, join_envs(head, run_once(head.copy())))
        finally:
            self.silent -= 1
        after = run_once(head.copy())
        return join_envs(head, after)

    def exec_for(self, node: cst.For, env: Env) -> Env:
        iterable = self.eval(node.iter, env)
        if _unrollable(node, iterable):
            return self.exec_unrolled(node, iterable, env)
        element = self.element_of(iterable, node.iter, node.target, env)

        def run_once(state: Env) -> Env:
            self.assign(node.target, element, state, node)
            state = self.exec_suite(node.body, state)
            state.dead = False  # `break`/`continue`/`return` paths rejoin the head
            return state

        over_loader = SOURCE_LOADER in (element.source, *(item.source for item in element.items))
        guarded = env.guarded
        if iterable.source == SOURCE_AVAILABILITY or _names_accelerators(node.iter):
            # `for i in range(torch.cuda.device_count()):`, `for gpu in args.gpus:` run only with GPUs
            # (a loop over user-named `devices` may well be over ["cpu"])
            env = env.copy()
            env.guarded = True
        # (walking a tensor's elements on the host syncs once per element already)
        result = self.exec_loop_body(env, run_once, node, node.target, over_loader, over_tensor=iterable.kind in (TENSOR, BATCH),
                                     over_constants=few_constants(iterable))
        result.guarded = guarded
        if node.orelse is not None:
            result = self.exec_suite(node.orelse.body, result)
        return result

    def exec_unrolled(self, node: cst.For, iterable: Value, env: Env) -> Env:
        """`for k in ("image", "masked_image"): batch[k] = batch[k].to(device)`: the body once per
        constant, in order, each pass with its own key (so keyed dicts are updated key by key)."""
        self.loop_depth += 1
        frame = self.push_frame(node.target, False, id(node), node)
        frame.over_constants = True
        try:
            for item in iterable.items:
                frame.assigned, frame.carried = set(), set()
                self.assign(node.target, item, env, node)
                env = self.exec_suite(node.body, env)
                if env.dead:
                    break
        finally:
            self.loop_depth -= 1
            self.frames.pop()
        if node.orelse is not None and not env.dead:
            env = self.exec_suite(node.orelse.body, env)
        return env

    def exec_while(self, node: cst.While, env: Env) -> Env:
        def run_once(state: Env) -> Env:
            test = self.truth_test(self.eval(node.test, state))
            self.note_test_sync(node.test, test, "while")
            self.narrow_wrapped(node.test, state, state.copy())
            state = self.exec_suite(node.body, state)
            state.dead = False
            return state

        self.eval(node.test, env)
        result = self.exec_loop_body(env, run_once, node)
        # (`while hasattr(model, "module"): model = model.module`: after the loop the test fails)
        self.narrow_wrapped(node.test, result.copy(), result)
        if node.orelse is not None:
            result = self.exec_suite(node.orelse.body, result)
        return result

    def exec_try(self, node, env: Env) -> Env:
        before = env.copy()
        body = self.exec_suite(node.body, env.copy())
        if node.orelse is not None:
            body = self.exec_suite(node.orelse.body, body)
        result = body
        for handler in node.handlers:
            start = join_envs(before, body) if not body.dead else before.copy()
            if handler.name is not None and isinstance(handler.name.name, cst.Name):
                start.bind(handler.name.name.value, UNKNOWN_VALUE)
            # (a handler runs when something failed, not every step: an OOM fallback that moves the
            # model to the CPU and back is no per-step work)
            self.interval_depth += 1
            try:
                result = join_envs(result, self.exec_suite(handler.body, start))
            finally:
                self.interval_depth -= 1
        if node.finalbody is not None:
            dead = result.dead
            result.dead = False
            result = self.exec_suite(node.finalbody.body, result)
            result.dead = result.dead or dead
        return result

    def _set_after_first_iteration(self, test: cst.BaseExpression) -> bool:
        """`prev is None` in a loop whose body binds `prev`: set once the first pass is done."""
        name = _is_none_test(test)
        frame = self.frames[-1] if self.frames else None
        return name is not None and frame is not None and frame.key is not None and name in frame.rebound

    def exec_then(self, node: cst.If, env: Env) -> Env:
        """The body of an `if`, outside the hot path when the test picks an interval or a lazy set-up."""
        depth = self.interval_depth
        # (`if step % accumulation == 0: optimizer.step()` is the training step itself, not an interval)
        interval = ((is_interval_test(node.test) or self.asks_interval(node.test) or _lazy_initialisation(node))
                    and not self.steps_optimizer(node.body, env))
        self.interval_depth += 1 if interval else 0
        # (`if self._pin_mem: out = out.pin_memory()`: pinning the program's own option asked for)
        asked = 1 if self.program.syntax_fact(node.test, "pins", lambda test: api.names_pinning_option(
            n.value for n in walk(test) if isinstance(n, cst.Name))) else 0
        self.pinning_asked += asked
        try:
            return self.exec_suite(node.body, env)
        finally:
            self.interval_depth = depth
            self.pinning_asked -= asked

    def manages_context(self, value: Value, expr: cst.BaseExpression) -> bool:
        # (`with Timer():`, or an object made earlier: `with timers[0]:`, `with self.profile:`)
        return (value.kind == OBJECT and bool(value.cls)
                and isinstance(expr, (cst.Call, cst.Name, cst.Attribute, cst.Subscript))
                and self.program.defines(value.cls, "__enter__"))

    def exec_with(self, node: cst.With, env: Env) -> Env:
        saved_default, saved_gpu = env.default_device, env.current_gpu
        expects_failure = False
        managers: List[Tuple[Value, cst.BaseExpression]] = []
        for item in node.items:
            value = self.eval(item.item, env)
            if value.kind == DEVICE and isinstance(item.item, cst.Call):
                env.default_device = value.device  # `with torch.device(...)`
            if isinstance(item.item, cst.Call) and item.item.args and dotted_name(item.item.func) is not None:
                callee = self.eval(item.item.func, env)  # (a dotted name: looking it up again does nothing)
                if callee.kind == REF and callee.cls in api.CURRENT_GPU_CONTEXTS:  # `with torch.cuda.device(1):`
                    first = item.item.args[0]
                    gpu = self.device_argument(first.value, self.eval(first.value, env), env)
                    env.current_gpu = current_gpu_after(gpu)
            if isinstance(item.item, cst.Call) and last_identifier(item.item.func) in _EXPECTS_FAILURE:
                expects_failure = True
            entered = UNKNOWN_VALUE
            if self.manages_context(value, item.item):
                # `with TorchTracemalloc() as t:` of a class of this file: its `__enter__` runs here,
                # and `as` names what it returns; its `__exit__` runs after the body
                managers.append((value, item.item))
                entered = self.program.call_method(value, "__enter__", item.item, [], self, env)
            if item.asname is not None:
                self.assign(item.asname.name, entered, env, node)
        self.silent += expects_failure  # a test that asserts the crash is not a bug
        try:
            env = self.exec_suite(node.body, env)
            for manager, call in reversed(managers):
                if self.program.defines(manager.cls, "__exit__"):
                    self.program.call_method(manager, "__exit__", call, [], self, env)
        finally:
            self.silent -= expects_failure
        env.default_device, env.current_gpu = saved_default, saved_gpu
        return env

    def exec_match(self, node, env: Env) -> Env:
        self.eval(node.subject, env)
        result: Optional[Env] = None
        for case in node.cases:
            branch = self.exec_suite(case.body, env.copy())
            result = branch if result is None else join_envs(result, branch)
        return join_envs(env, result) if result is not None else env

    # --- assignment -----------------------------------------------------------

    def assign(self, target: cst.BaseExpression, value: Value, env: Env, statement: cst.CSTNode) -> None:
        if isinstance(target, (cst.Name, cst.Attribute)) and value.kind == TENSOR:
            self.note_optimized_tensor_rebound(target, value, env)
        if isinstance(target, cst.Name):
            env.bind(target.value, value)
            if self.frames:
                self.note_loop_assignment(target.value, statement)
        elif isinstance(target, cst.Attribute):
            key = dotted_name(target)
            if key is not None:
                if key.startswith("self.") and key.count(".") == 1 and self.scope.in_module_init:
                    self.program.note_module_attribute(self, target, value, env, statement)
                if value.kind in (MODULE, TENSOR, BATCH) and value.origin is not None:
                    value = replace(value, stored=statement)
                # (`model.policy.extractor = ...`: the owner is the field the chain reads, `model.policy`)
                owner = self.lookup(key.rsplit(".", 1)[0], env) if key.count(".") == 1 else self.eval(target.value, env)
                value = self.replaced_buffer(key, value, owner, statement)
                left_behind = owner is not None and _left_behind(owner, value)
                if left_behind:  # (the part itself says so: calls of it in `forward` are where it fails)
                    value = replace(value, stray=statement)
                env.bind(key, value)
                if owner is not None and owner.kind == MODULE:
                    # `model.hyp = hyp` on a DataParallel/DDP wrapper: the wrapper has it from now on
                    self.program.wrapper_fields.update(
                        (id(side.wrapped_at), target.attr.value) for side in owner.alternatives or (owner,)
                        if side.wrapped_at is not None)
                if owner is not None and owner.ident is not None and owner.kind in (MODULE, OBJECT):
                    # the object's field, seen by every alias and method (weakly when it is one of several)
                    self.program.contexts.heap.store(owner.ident, target.attr.value, value, strong=not owner.aliases)
                if left_behind:
                    self.note_part_left_behind(key.rsplit(".", 1)[0], owner, statement, env)
        elif isinstance(target, (cst.Tuple, cst.List)):
            elements = target.elements
            for index, element in enumerate(elements):
                if isinstance(element, cst.StarredElement):
                    self.assign(element.value, UNKNOWN_VALUE, env, statement)
                else:
                    self.assign(element.value, self.unpack(value, index, len(elements), element.value), env, statement)
        elif isinstance(target, cst.Subscript):
            self.note_environment_write(environment_key(target), statement)
            self.program.note_container_store(self, target, value, env, statement)
            container = self.eval(target.value, env)
            key, name = self.literal_index(target, env), dotted_name(target.value)
            if key is not None and name is not None and (container.keyed or (
                    container.kind == LIST and container.cls == "dict" and not container.items)):
                # `batch["labels"] = batch["labels"].to(device)`: that key now holds the moved tensor
                entries = dict(container.keyed)
                entries[key] = value
                env.values[name] = keyed_dict(tuple(entries.items()), container.origin)
            elif container.kind in (LIST, TUPLE, BATCH) and (container.kind != TUPLE or container.cls in ("list", "dict")):
                self.grow_container(container, target.value, value, env)
            elif (container.kind == TENSOR and container.device.is_cpu and name is not None
                  and container.source in (SOURCE_FACTORY, SOURCE_STEP)):
                # `result[i, :n] = torch.tensor(ids)`: a host buffer filled from python data, which a
                # factory on the device would not help (each write would be a copy): no DEV402 for it
                env.values[name] = replace(container, source=SOURCE_CREATED)
        elif isinstance(target, cst.StarredElement):
            self.assign(target.value, UNKNOWN_VALUE, env, statement)

    def literal_index(self, target: cst.Subscript, env: Env) -> Optional[str]:
        """`d["labels"]`, or `d[k]` with `k` bound to a string constant (a loop over written-out keys)."""
        key = _literal_key(target)
        if key is None and len(target.slice) == 1 and isinstance(target.slice[0].slice, cst.Index) \
                and isinstance(target.slice[0].slice.value, cst.Name):
            index = self.eval(target.slice[0].slice.value, env)
            if index.literal is not None and isinstance(index.literal[0], str):
                key = index.literal[0]
        return key

    def unpack(self, value: Value, index: int, count: int, target: cst.CSTNode) -> Value:
        if value.kind == TUPLE and len(value.items) == count:
            return value.items[index]
        if value.kind == BATCH:
            # Each unpacked tensor is its own root cause: it gets its own origin.
            self.program.same_batch(value.origin, target)
            return Value(kind=TENSOR, device=value.device, origin=target, source=value.source, stored=value.stored,
                         scalar=False if value.source else None)
        if value.kind == LIST and value.items:
            return value.items[0]
        if value.source in (SOURCE_DEVICE_AWARE, SOURCE_OPAQUE, SOURCE_MIXED, PROJECT_SOURCE) and value.kind == ANY:
            # `model, loader = accelerator.prepare(model, loader)`; `dtype, device = helper(...)` of
            # another file: what it gave, not guessed from the names it is unpacked into
            return value
        if value.kind == HOST and value.cls == _SIZE:  # `n, c, h, w = images.shape`: numbers
            return Value(kind=HOST, cls="int")
        if value.kind == TENSOR:  # `values, indices = torch.max(t, 1)`, `a, b = t.chunk(2)`
            return Value(kind=TENSOR, device=value.device, origin=value.origin, via=value.via, source=value.source,
                         stored=value.stored)
        return UNKNOWN_VALUE

    def element_of(self, iterable: Value, node: cst.BaseExpression, origin: cst.CSTNode, env: Optional[Env] = None) -> Value:
        """What one iteration over `iterable` yields."""
        kind = iterable.kind
        if kind == OBJECT:  # an object of this file: what its `__iter__` yields, else unknown
            element = self.program.iterate(iterable, node, self, env) if env is not None else None
            return _host_sample(element, origin) if element is not None else UNKNOWN_VALUE
        if kind == LOADER or (kind not in (LIST, TUPLE, BATCH, TENSOR, MODULE, HOST, DEVICE, REF)
                                and not iterable.device.known and api.is_loader_name(last_identifier(node))
                                and iterable.source not in (SOURCE_DEVICE_AWARE, SOURCE_MIXED, SOURCE_OPAQUE)):
            if kind == LOADER and iterable.source == SOURCE_MIXED:
                return UNKNOWN_VALUE  # a dataset whose items may already be on the accelerator
            if kind == LOADER and iterable.origin is not None:
                self.program.batch_loaders[id(origin)] = iterable.origin
            if kind == LOADER and iterable.device.known and not iterable.device.is_cpu:
                return Value(kind=BATCH, device=iterable.device, origin=iterable.origin, via=iterable.via)  # a dataset already on the device
            if kind == LOADER and iterable.items:  # a TensorDataset whose tensors live on different devices
                return Value(kind=TUPLE, items=tuple(
                    Value(kind=TENSOR, device=api.CPU, origin=origin, source=SOURCE_LOADER, scalar=False)
                    if item.device.is_cpu else item for item in iterable.items))
            return Value(kind=BATCH, device=api.CPU, origin=origin, source=SOURCE_LOADER)
        if kind == LIST and iterable.cls == "generator" and iterable.items:
            return _host_sample(iterable.items[0], origin)
        if kind == LIST:
            return iterable.items[0] if iterable.items else UNKNOWN_VALUE
        if kind == TUPLE:
            return join_all(iterable.items)
        if kind in (BATCH, TENSOR):
            # (the elements of a list of shaped tensors are shaped)
            return Value(kind=TENSOR, device=iterable.device, origin=iterable.origin, via=iterable.via, source=iterable.source,
                         scalar=False if kind == BATCH and iterable.scalar is False else None)
        if kind == HOST and iterable.source == SOURCE_LOADER:  # rows of a batch turned into numpy
            return iterable
        if kind == HOST and iterable.literal is None and not iterable.source:  # rows of a numpy array
            return Value(kind=HOST)
        if kind == MODULE:  # iterating a ModuleList/Sequential yields its submodules
            return _part_of(iterable)
        return UNKNOWN_VALUE

    # --- expressions ------------------------------------------------------------

    def eval(self, node: cst.BaseExpression, env: Env) -> Value:
        method = getattr(self, "eval_" + type(node).__name__, None)
        if method is None:
            self.eval_children(node, env)
            return UNKNOWN_VALUE
        return method(node, env)

    def eval_children(self, node: cst.CSTNode, env: Env) -> None:
        """Evaluate sub-expressions for their facts; the value is unknown."""
        for child in child_nodes(node):
            if isinstance(child, cst.BaseExpression):
                self.eval(child, env)
            elif isinstance(child, (cst.Arg, cst.Element, cst.DictElement, cst.StarredDictElement,
                                    cst.FormattedStringExpression, cst.Index, cst.SubscriptElement)):
                self.eval_children(child, env)

    def eval_Name(self, node: cst.Name, env: Env) -> Value:
        value = self.lookup(node.value, env)
        if value is not None:
            return value
        if node.value in _CONSTANTS:
            return Value(kind=HOST, literal=(_CONSTANTS[node.value],))
        return UNKNOWN_VALUE

    def eval_Attribute(self, node: cst.Attribute, env: Env) -> Value:
        key = dotted_name(node)
        if key is not None:
            value = self.lookup(key, env)
            if value is not None:
                return value
        base = self.eval(node.value, env)
        value = self.attribute_of(base, node.attr.value, node, env)
        if value.kind == REF and value.cls in api.AVAILABILITY_CHECKS:
            # the function, not its answer: a bug where it is tested for truth (`if torch.cuda.is_available:`
            # is always true), not where it is used as an object (`hasattr(torch.cuda.device_count, ...)`)
            return Value(kind=HOST, source=SOURCE_AVAILABILITY, cls=_UNCALLED + value.cls, origin=node)
        return value

    def asks_interval(self, test: cst.BaseExpression) -> bool:
        """`if engine.is_gradient_accumulation_boundary():`, a function of this file that answers
        an interval test."""
        predicates = self.program.interval_predicates
        return bool(predicates) and any(
            isinstance(node, cst.Call) and last_identifier(node.func) in predicates for node in sub_expressions(test))

    def truth_test(self, value: Value) -> Value:
        """`value` decides a branch: an availability function that was never called is always true."""
        # (always true wherever it runs, so a run that records nothing else, such as a class body's,
        # still records this one, once)
        if value.cls.startswith(_UNCALLED) and value.origin is not None and self.program.first_report(value.origin):
            self.program.facts.misuses.append(ApiMisuse(value.origin, AVAILABILITY_NOT_CALLED, value.cls[len(_UNCALLED):]))
        return value

    def attribute_of(self, base: Value, attr: str, node: cst.CSTNode, env: Env) -> Value:
        kind = base.kind
        if kind == OBJECT and base.alternatives:  # one of several objects: that field of one of them
            return join_all([self.attribute_of(side, attr, node, env) for side in base.alternatives])
        if base.keyed and base.cls != "dict":  # a namespace: `ns.input_ids` is what it was built with
            stored = key_of(base, attr)
            if stored is not None:
                return stored
        if kind == REF:
            qualname = f"{base.cls}.{attr}"
            value = self.program.place.value(qualname, node) or Value(kind=REF, cls=qualname)
            legacy = api.tensor_type_device(qualname) if value.kind == REF else None
            if legacy is not None and legacy.kind == api.CUDA:
                # `Tensor = torch.cuda.FloatTensor`: naming the CUDA type is where CUDA was asked for
                value = replace(value, device=self.accelerator_literal(legacy, env, node), origin=node)
            return value
        if kind == MODULE:  # (first: `model.device` of a DataParallel wrapper raises, too)
            self.note_wrapper_attribute(base, attr, node)
        if kind in (TENSOR, BATCH, MODULE) and attr == "device" and not base.device.known:
            # wherever a tensor the analysis cannot place is (`torch.empty(0).device`, the default
            # device): unknown, and a variable named `device` holding it is no device to guess about
            return Value(kind=DEVICE, source=SOURCE_MIXED, origin=node)
        if kind in (TENSOR, BATCH):
            if attr == "device":
                return Value(kind=DEVICE, device=base.device, origin=base.origin, via=base.via)
            flag = api.device_flag(attr, base.device.kind)
            if flag is not None:  # `if y.is_cuda and ...:` is decided (a CPU tensor never takes it)
                return Value(kind=HOST, literal=(flag,))
            if attr == "shape":  # a torch.Size: a tuple of ints on the host
                return Value(kind=HOST, cls=_SIZE)
            if attr in api.HOST_ATTRIBUTES or attr in api.HOST_OUTPUT_ATTRIBUTES:
                return Value(kind=HOST)
            # (a parameter's `.data` and `.grad` are where the parameter is, and move with its module)
            same_storage = attr in ("data", "grad") and base.parameter
            return Value(kind=TENSOR, device=base.device, origin=base.origin, via=base.via, source=base.source,
                         scalar=base.scalar if attr in ("T", "mT", "data", "grad") else None,
                         parameter=same_storage, owner=base.owner if same_storage else None)
        if kind == MODULE:
            if attr == "device":
                return Value(kind=DEVICE, device=base.device, origin=base.origin, via=base.via)
            if attr in ("weight", "bias"):
                return Value(kind=TENSOR, device=base.device, origin=base.origin, via=base.via, parameter=True)
            if attr == api.WRAPPED_MODULE_ATTRIBUTE and base.wrapped_at is not None:  # DataParallel(model).module
                return replace(base, scatters="", wrapped_at=None)
            if base.cls == "ModuleDict" and attr not in api.MODULE_API_ATTRIBUTES and not attr.startswith("_"):
                return _part_of(base)  # `self.transformer.wpe`: the part stored under that key
            return self.program.class_attribute(base, attr)
        if kind == OBJECT:
            return self.program.class_attribute(base, attr)
        if kind == DEVICE and attr in ("type", "index"):
            known = base.device.kind in (CPU_KIND, CUDA, MPS, XPU, META) and attr == "type"
            return Value(kind=HOST, source=SOURCE_DEVICE_TYPE, literal=(base.device.kind,) if known else None)
        if kind == ANY and base.ident is not None:
            stored = self.program.contexts.field(base, attr)  # `args.device` a helper set on the namespace
            if stored is not None:
                return stored
        if kind == ANY and attr == "device" and not _names_settings(node):
            # the device of a value we do not know (not `args.device`, a chosen device): unknown,
            # and a callee's `device` parameter bound to it is no device variable to guess about
            if base.device.known:
                return Value(kind=DEVICE, device=base.device, origin=base.origin, via=base.via)
            return Value(kind=DEVICE, source=SOURCE_MIXED, origin=node)
        return UNKNOWN_VALUE

    def eval_SimpleString(self, node: cst.SimpleString, env: Env) -> Value:
        return self.string_value(string_value(node), node, env)

    def eval_ConcatenatedString(self, node: cst.ConcatenatedString, env: Env) -> Value:
        return self.string_value(string_value(node), node, env)

    def eval_FormattedString(self, node: cst.FormattedString, env: Env) -> Value:
        for part in node.parts:
            if isinstance(part, cst.FormattedStringExpression):
                value = self.eval(part.expression, env)
                self.note_sync(part.expression, value, part, "f-string")
        head = node.parts[0] if node.parts else None
        if isinstance(head, cst.FormattedStringText) and head.value.startswith(("cuda:", "cuda")):
            device = self.accelerator_literal(api.parse_device_string("cuda"), env)
            if head.value.startswith("cuda:") and len(node.parts) > 1:
                device = replace(device, key=PER_RANK)  # f"cuda:{local_rank}"
            return Value(kind=DEVICE, device=device, origin=node)
        return Value(kind=HOST)

    def string_value(self, text: Optional[str], node: cst.CSTNode, env: Env) -> Value:
        device = api.parse_device_string(text) if text is not None else None
        if device is None:
            return Value(kind=HOST, cls="str", literal=(text,) if text is not None and len(text) <= _LITERAL_TEXT else None)
        return Value(kind=DEVICE, device=self.accelerator_literal(device, env, node), origin=node, cls="str")

    def accelerator_literal(self, device, env: Env, root: Optional[cst.CSTNode] = None):
        """A literal accelerator: unguarded unless availability was checked on this path."""
        if device.kind == api.CUDA and not env.guarded:
            return replace(device, kind="unguarded", root=root)
        return device

    def eval_Integer(self, node, env):
        number = integer_value(node)
        return Value(kind=HOST, cls="int", literal=(number,) if number is not None else None)

    eval_Float = eval_Imaginary = eval_Integer

    def eval_Tuple(self, node: cst.Tuple, env: Env) -> Value:
        items = []
        for element in node.elements:
            value = self.eval(element.value, env)
            items.append(UNKNOWN_VALUE if isinstance(element, cst.StarredElement) else value)
        if any(isinstance(element, cst.StarredElement) for element in node.elements):
            return container_of(items, "list")
        return Value(kind=TUPLE, items=tuple(items), origin=node)

    def eval_List(self, node: cst.List, env: Env) -> Value:
        items = [self.eval(element.value, env) for element in node.elements]
        if not items:
            return Value(kind=LIST, cls="list", origin=node)
        if any(isinstance(element, cst.StarredElement) for element in node.elements):
            return container_of(items, "list")
        return Value(kind=TUPLE, items=tuple(items), origin=node, cls="list")

    def eval_Set(self, node, env):
        self.eval_children(node, env)
        return Value(kind=HOST)

    def eval_Dict(self, node: cst.Dict, env: Env) -> Value:
        values = []
        for element in node.elements:
            if isinstance(element, cst.DictElement):
                self.eval(element.key, env)
                values.append(self.eval(element.value, env))
                if isinstance(element.value, (cst.SimpleString, cst.ConcatenatedString)):  # settings: `{"device": "cuda"}`
                    self.note_settings_default(string_value(element.key), Arg(element, values[-1]), "config default")
            else:
                values.append(UNKNOWN_VALUE)
                self.eval(element.value, env)
        if not values:
            return Value(kind=LIST, cls="dict", origin=node)
        keys = [string_value(e.key) if isinstance(e, cst.DictElement) else None for e in node.elements]
        if all(key is not None for key in keys):
            return keyed_dict(tuple(zip(keys, values)), node)
        # options beside the tensors (`{"params": ps, "lr": 0.1}`, `{"ids": t, "n": 3}`) say nothing
        # about where the tensors are
        placed = [v for v in values if v.kind != HOST] or values
        return replace(container_of(placed, "dict"), origin=node)

    def eval_comprehension(self, node, env: Env, element_nodes) -> List[Value]:
        """A comprehension is a loop: its element runs once per item, so a step function called there
        is called every step. Like a loop, it is walked silently first (to learn whether it steps a
        model), then once recording."""
        scope = env.copy()
        for_in = node.for_in
        first_target = for_in.target
        over_loader = False
        over_constants = True
        while for_in is not None:
            iterable = self.eval(for_in.iter, scope)
            over_constants = over_constants and few_constants(iterable)
            element = self.element_of(iterable, for_in.iter, for_in.target, scope)
            over_loader = over_loader or element.source == SOURCE_LOADER
            self.assign(for_in.target, element, scope, node)
            for condition in for_in.ifs:
                self.eval(condition.test, scope)
            for_in = for_in.inner_for_in
        self.loop_depth += 1
        self.push_frame(first_target, over_loader, id(node)).over_constants = over_constants
        try:
            self.silent += 1
            try:
                for element in element_nodes:
                    self.eval(element, scope.copy())
            finally:
                self.silent -= 1
            return [self.eval(element, scope) for element in element_nodes]
        finally:
            self.loop_depth -= 1
            self.frames.pop()

    def eval_ListComp(self, node, env):
        (element,) = self.eval_comprehension(node, env, [node.elt])
        return collected_at(container_of([element], "list"), node)

    eval_GeneratorExp = eval_SetComp = eval_ListComp

    def eval_DictComp(self, node, env):
        _, value = self.eval_comprehension(node, env, [node.key, node.value])
        return collected_at(container_of([value], "dict"), node)

    def eval_Subscript(self, node: cst.Subscript, env: Env) -> Value:
        base = self.eval(node.value, env)
        indices = []
        for element in node.slice:
            if isinstance(element.slice, cst.Index):
                indices.append((element.slice.value, self.eval(element.slice.value, env)))
            else:
                self.eval_children(element, env)
        if base.kind == TENSOR and base.device.is_cpu:
            # `table[timesteps]`: a CPU tensor indexed by an accelerator tensor fails (indices must be on
            # the CPU or on the indexed tensor's device); the other way round is allowed
            for expr, index in indices:
                # (a 0-dim index is taken as a number, wherever it is: only a shaped one is checked)
                if index.kind == TENSOR and index.scalar is False and conflicts(index.device, base.device):
                    return self.check_operands(node, [(node.value, base), (expr, index)], "indexing", arithmetic=False)
        key = _literal_key(node)
        if key is None and len(indices) == 1 and indices[0][1].literal is not None \
                and isinstance(indices[0][1].literal[0], str):
            key = indices[0][1].literal[0]  # (`OPTIMIZERS[name]` with `name="adagrad"` bound by the call)
        if base.keyed and key is not None:
            stored = key_of(base, key)
            if stored is not None:
                return stored
        if base.kind == TENSOR and isinstance(base.origin, cst.Param) and all(
                isinstance(e.slice, cst.Index) and isinstance(e.slice.value, cst.Integer) for e in node.slice):
            # `window_size[0]` of an input only guessed to be a tensor (a forward's first parameter):
            # indexed by a constant, it may as well be a tuple of sizes
            return UNKNOWN_VALUE
        if base.kind in (TENSOR, BATCH):
            # a slice of a shaped tensor (`t[:, 1:]`) is shaped, and so is one given new axes
            # (`mask[None, None]`); an integer index may leave a 0-dim one. A tensor cannot be sliced
            # unless it has a dimension, so `boxes[:, 2]` is shaped whatever `boxes` was known to be
            sliced = (base.scalar is False or base.kind == TENSOR) and any(
                isinstance(e.slice, cst.Slice) or (isinstance(e.slice, cst.Index) and isinstance(e.slice.value, cst.Name)
                                                    and e.slice.value.value == "None")
                for e in node.slice)
            return Value(kind=TENSOR, device=base.device, origin=base.origin, via=base.via, source=base.source,
                         scalar=False if (base.kind == BATCH and (base.source or base.scalar is False)) or sliced else None)
        if base.kind == TUPLE and len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
            index = node.slice[0].slice.value
            if isinstance(index, cst.Integer):
                position = int(index.value)
                if -len(base.items) <= position < len(base.items):
                    return base.items[position]
            return join_all(base.items)
        if base.kind == LIST and base.items:
            return base.items[0]
        if base.kind == DATASET and base.origin is not None:  # `dataset[i]`: that sample of each tensor it holds
            if base.items:
                return Value(kind=TUPLE, items=base.items)
            if base.device.known:
                return Value(kind=BATCH, device=base.device, origin=base.origin)
        if base.kind == MODULE:  # nn.Sequential / ModuleList indexing
            return _part_of(base)
        if base.kind == HOST and base.source == SOURCE_LOADER:  # `img[..., ::-1]`: a view of that step's data
            return base
        if base.kind == HOST and base.literal is None:  # `self.observations[batch_inds]`: host data too
            return Value(kind=HOST)
        return UNKNOWN_VALUE

    def eval_dropped_operation(self, node: cst.BinaryOperation, env: Env) -> None:
        """`noise.to(device) * mask` as a statement of its own: computed and thrown away, so a move
        written as one of its operands is lost with it."""
        left, right = (self.eval_call(side, env, discarded=True) if is_move_call(side) else self.eval(side, env)
                       for side in (node.left, node.right))
        self.binary(node, node.left, left, node.right, right, _operator_text(node.operator), env)

    def eval_BinaryOperation(self, node: cst.BinaryOperation, env: Env) -> Value:
        left = self.eval(node.left, env)
        right = self.eval(node.right, env)
        return self.binary(node, node.left, left, node.right, right, _operator_text(node.operator), env)

    def binary(self, node, left_node, left: Value, right_node, right: Value, operator: str, env: Env) -> Value:
        if left.kind not in (TENSOR, BATCH) and right.kind not in (TENSOR, BATCH):
            if operator == "+" and (string_value(left_node) or "").startswith("cuda:"):  # "cuda:" + str(gpu)
                device = replace(self.accelerator_literal(api.parse_device_string("cuda"), env), key=PER_RANK)
                return Value(kind=DEVICE, device=device, origin=node)
            loader_data = next((v for v in (left, right) if v.kind == HOST and v.source == SOURCE_LOADER), None)
            if loader_data is not None:  # numpy arithmetic on a batch is still that batch's data, worked on
                return replace(loader_data, host_work=node)
            if left.kind == HOST and right.kind == HOST:
                return Value(kind=HOST, source=left.source or right.source, origin=left.origin or right.origin)
            return UNKNOWN_VALUE
        return self.check_operands(node, [(left_node, left), (right_node, right)], operator,
                                   arithmetic=operator != "@")

    def eval_Comparison(self, node: cst.Comparison, env: Env) -> Value:
        # `a < b < c` is `a < b and b < c`: each part compares its own pair, and a part that is a
        # tensor (`s_tmin <= sigmas[i] <= s_tmax`) makes the whole test one
        left_node = node.left
        left = _spelled(left_node, self.eval(left_node, env))
        result: Optional[Value] = None
        for target in node.comparisons:
            right = _spelled(target.comparator, self.eval(target.comparator, env))
            part = self.compare(node, left_node, left, target, right, env)
            if result is None or (part.kind == TENSOR and result.kind != TENSOR):
                result = part
            elif result.kind != TENSOR and result.literal is not None and result.literal[0]:
                result = part  # (`True and part` is the part; a false part ends the chain's value)
            left_node, left = target.comparator, right
        return result if result is not None else left

    def compare(self, node: cst.Comparison, left_node: cst.BaseExpression, left: Value, target: cst.ComparisonTarget,
                right: Value, env: Env) -> Value:
        """One pair of a comparison: `left <op> right`."""
        operator = type(target.operator).__name__
        if left.literal is not None and right.literal is not None and operator in _LITERAL_TESTS:
            return Value(kind=HOST, literal=(_LITERAL_TESTS[operator](left.literal[0], right.literal[0]),))
        if operator in ("Is", "IsNot") and (None,) in (left.literal, right.literal):
            # `bands is None` where `bands` is a tensor the call passed: only one branch runs
            other = right if left.literal == (None,) else left
            if surely_not_none(other):
                return Value(kind=HOST, literal=(operator == "IsNot",))
        if operator in ("Is", "IsNot", "In", "NotIn"):
            return Value(kind=HOST, source=left.source or right.source)
        if left.kind == DEVICE or right.kind == DEVICE or SOURCE_DEVICE_TYPE in (left.source, right.source):
            return Value(kind=HOST, source=SOURCE_AVAILABILITY)
        result = self.binary(node, left_node, left, target.comparator, right, _operator_text(target.operator), env)
        if result.kind != TENSOR:
            result = Value(kind=HOST, source=left.source or right.source)
        return result

    def eval_UnaryOperation(self, node: cst.UnaryOperation, env: Env) -> Value:
        value = self.eval(node.expression, env)
        if isinstance(node.operator, cst.Not):
            self.truth_test(value)
        if isinstance(node.operator, cst.Not) and value.kind != TENSOR:
            known = value.literal is not None
            return Value(kind=HOST, source=value.source, literal=(not value.literal[0],) if known else None)
        if value.kind == HOST:
            return replace(value, literal=None)
        return value if value.kind == TENSOR else UNKNOWN_VALUE

    def eval_BooleanOperation(self, node: cst.BooleanOperation, env: Env) -> Value:
        left = self.eval(node.left, env)
        right_env = env
        if mentions_device(node.left) and not env.guarded:
            # `x.device.type != "cuda" or torch.cuda.f(x.device)`: the right side runs only on one device
            right_env = env.copy()
            right_env.guarded = True
        same = same_device_names(node.left, isinstance(node.operator, cst.And))
        if same is not None:
            # `not a.device == b.device or torch.equal(a, b)`: the right side runs only when they share one
            right_env = right_env.copy() if right_env is env else right_env
            values = [self.lookup(name, env) for name in same]
            for index in (1, 0):  # the tensor takes the device the other one is known to be on
                value, other = values[index], values[1 - index]
                if value is not None and other is not None and value.kind in (TENSOR, BATCH) and other.device.known:
                    right_env.values[same[index]] = replace(value, device=other.device, source="")
                    break
        if wrapper_tests(node.left, self.program.wrapper_predicates):
            # the right side runs where the left holds (`and`) or fails (`or`): a model wrapped on
            # one path is, there, the side the test says
            right_env = right_env.copy() if right_env is env else right_env
            holds, fails = (right_env, right_env.copy()) if isinstance(node.operator, cst.And) else (right_env.copy(), right_env)
            self.narrow_wrapped(node.left, holds, fails)
        right = self.eval(node.right, right_env)
        if isinstance(node.operator, cst.And) and _tests_properties_of(node.left, node.right):
            self.tested_operand = (node, node.right, right)
        elif isinstance(node.operator, cst.Or) and self._set_after_first_iteration(node.left):
            # `old_denoised is None or sigmas[i + 1] == 0`: from the second iteration on the left
            # fails, and the right is read on the host
            self.tested_operand = (node, node.right, right)
        self.truth_test(left)
        self.truth_test(right)
        if SOURCE_AVAILABILITY in (left.source, right.source):
            return Value(kind=HOST, source=SOURCE_AVAILABILITY)
        if left.literal is not None and right.literal is not None:  # `distributed and "cuda" in kind`
            first = bool(left.literal[0])
            chosen = (right if first else left) if isinstance(node.operator, cst.And) else (left if first else right)
            return Value(kind=HOST, literal=(bool(chosen.literal[0]),))
        if left.literal is not None and isinstance(node.operator, cst.And):
            # a switch known to be off: False; one known to be on (`args.logging_nan_inf_filter`,
            # True by default): the right side is the test (`torch.isnan(loss)`, read on the host)
            return Value(kind=HOST, literal=(False,)) if not left.literal[0] else right
        if left.literal is not None and isinstance(node.operator, cst.Or):
            # `device or torch.device(...)` with `device=None`: the right side; a truthy constant: itself
            return right if not left.literal[0] else left
        return join_values(left, right)

    def reads_rebound_fields(self, test: cst.BaseExpression) -> bool:
        """A test on fields (`if self.head is not None:`) may see a value another method set later:
        it decides a branch by its literal only if no code of the file assigns those fields after
        `__init__` (see `rebound_fields`)."""
        for node in sub_expressions(test):
            if isinstance(node, cst.Attribute):
                root = node
                while isinstance(root, cst.Attribute):
                    root = root.value
                if (isinstance(root, cst.Name) and root.value in ("self", "cls")
                        and may_be_rebound(node.attr.value, self.program.rebound_fields)):
                    return True
        return False

    def eval_IfExp(self, node: cst.IfExp, env: Env) -> Value:
        test = self.truth_test(self.eval(node.test, env))
        self.note_test_sync(node.test, test, "if")
        if test.literal is not None and test.source != SOURCE_AVAILABILITY and not self.reads_rebound_fields(node.test):
            return self.eval(node.body if test.literal[0] else node.orelse, env)
        split = self.is_device_choice(node.test, test, env)
        body_env, else_env = env.copy(), env.copy()
        if split:
            body_env.guarded = else_env.guarded = True
        self.narrow_wrapped(node.test, body_env, else_env)
        body = self.eval(node.body, body_env)
        orelse = self.eval(node.orelse, else_env)
        return join_values(body, orelse, split)

    def eval_NamedExpr(self, node, env):
        value = self.eval(node.value, env)
        self.assign(node.target, value, env, node)
        return value

    def eval_Yield(self, node, env):
        """`yield v`: the function is a generator; what it yields is what iterating it gives."""
        value = node.value
        if isinstance(value, cst.From):
            inner = self.eval(value.item, env)
            self.yields.append(self.element_of(inner, value.item, value.item, env))
        else:
            self.yields.append(self.eval(value, env) if value is not None else Value(kind=HOST))
        return UNKNOWN_VALUE

    def eval_Await(self, node, env):
        return self.eval(node.expression, env)

    def eval_Lambda(self, node, env):
        # its body runs whenever it is called (a dataclass `default_factory`, a sort key): what it
        # does is checked where it is written, its parameters unknown; where it is called (`zeros()`
        # after `zeros = lambda: torch.zeros(n, bsz, hid)`, or in a function it was handed to), it
        # gives what its body does there (`call_lambda`)
        scope = env.copy()
        for param in node.params.params:
            scope.bind(param.name.value, UNKNOWN_VALUE)
        self.eval(node.body, scope)
        self.program.lambda_scopes[id(node)] = env
        return Value(kind=FUNCTION, cls="<lambda>", origin=node)

    def call_lambda(self, node: cst.Lambda, args, env: Env) -> Value:
        """A lambda called, here or in a function it was handed to (`self._update(model, update_fn=
        lambda e, m: ...)`): its body on the arguments, in the scope it was written in."""
        defined_in = self.program.lambda_scopes.get(id(node))
        running = self.program.lambdas_running
        if defined_in is None or id(node) in running or any(a.node.star for a in args):
            return UNKNOWN_VALUE
        scope = defined_in.copy()
        params = node.params.params
        positional = [a.value for a in args if a.keyword is None]
        keywords = {a.keyword: a.value for a in args if a.keyword is not None}
        for index, param in enumerate(params):
            name = param.name.value
            value = positional[index] if index < len(positional) else keywords.get(name)
            if value is None:
                value = self.eval(param.default, defined_in) if param.default is not None else UNKNOWN_VALUE
            scope.bind(name, value)
        running.add(id(node))
        try:
            return self.eval(node.body, scope)
        finally:
            running.discard(id(node))

    def eval_Call(self, node: cst.Call, env: Env) -> Value:
        result = self.eval_call(node, env, discarded=False)
        # what a call we cannot see into returns is unknown, and stays so: not a loader of CPU
        # batches because it is named `data_loader` (opacus's `make_private(...)` wraps a loader
        # of GPU labels)
        return OPAQUE_VALUE if result == UNKNOWN_VALUE else result

    def exits(self, qualname: str) -> bool:
        return qualname in _EXITS


def _needs_several_devices(test: cst.BaseExpression) -> bool:
    """`device_count() > 1`, `device_count() >= 2`: true only where there are several GPUs."""
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1 or not isinstance(test.left, cst.Call):
        return False
    if not (dotted_name(test.left.func) or "").endswith(api.DEVICE_COUNT_FUNCTIONS):
        return False
    target = test.comparisons[0]
    bound = integer_value(target.comparator)
    if bound is None:
        return False
    if isinstance(target.operator, cst.GreaterThan):
        return bound >= 1
    return isinstance(target.operator, cst.GreaterThanEqual) and bound >= 2


def _left_behind(owner: Value, part: Value) -> bool:
    """`model.fc = nn.Linear(...)` once `model` is on an accelerator: the new part is on the CPU."""
    return (owner.kind == MODULE and owner.device.is_accelerator and owner.stray is None
            and part.kind == MODULE and part.stateful is True and part.device.is_cpu and not part.scatters)


def _names_accelerators(expression: cst.BaseExpression) -> bool:
    return any(isinstance(node, (cst.Name, cst.Attribute)) and api.names_accelerator(last_identifier(node) or "")
               for node in sub_expressions(expression))


def mentions_device(expression: cst.BaseExpression) -> bool:
    """Does an expression name a device, an accelerator or its availability anywhere?"""
    for node in sub_expressions(expression):
        if isinstance(node, cst.Name) and _DEVICE_FLAG.search(node.value):
            return True
        if isinstance(node, cst.Attribute) and _DEVICE_FLAG.search(node.attr.value):
            return True
        if isinstance(node, cst.SimpleString) and _DEVICE_FLAG.search(node.value[:40]):
            return True
    return False


def wrapper_tests(test: cst.BaseExpression, predicates: AbstractSet[str] = frozenset()
                  ) -> List[Tuple[cst.BaseExpression, bool]]:
    """The models a test says are DataParallel/DDP wrappers (True) or not (False) where it holds:
    `isinstance(m, (DataParallel, DDP))`, `type(m) in (DataParallel, DDP)`, `hasattr(m, "module")`,
    a function of the file answering one of those (`predicates`: `is_parallel(m)`), their `not`,
    in an `and`."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return wrapper_tests(test.left, predicates) + wrapper_tests(test.right, predicates)
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = wrapper_tests(test.expression, predicates)
        return [(expr, not holds) for expr, holds in inner] if len(inner) == 1 else []
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        return _type_is_wrapper(test)
    if (isinstance(test, cst.Call) and isinstance(test.func, cst.Name) and test.func.value in predicates
            and test.args and test.args[0].keyword is None):
        return [(test.args[0].value, True)]
    if not (isinstance(test, cst.Call) and isinstance(test.func, cst.Name) and len(test.args) in (2, 3)):
        return []
    subject, kinds, name = test.args[0].value, test.args[1].value, test.func.value
    if name == "isinstance" and len(test.args) == 2 and all(t in api.PARALLEL_WRAPPER_TYPES for t in isinstance_types(kinds)):
        return [(subject, True)]
    attribute = string_value(kinds)
    if (name == "hasattr" and len(test.args) == 2) or (name == "getattr" and len(test.args) == 3):
        if attribute == api.WRAPPED_MODULE_ATTRIBUTE:
            return [(subject, True)]
        if attribute is not None and attribute not in api.WRAPPER_OWN_ATTRIBUTES:
            # `getattr(model, "config", None) or model.module.config`: only the bare model has it
            return [(subject, False)]
    return []


#: What a test may read of a tensor without reading its values: its mode, not its data.
_TENSOR_PROPERTIES = frozenset({"dtype", "is_cuda", "device", "shape", "ndim", "requires_grad", "is_floating_point",
                                "dim", "numel", "size", "is_sparse", "layout"})


#: A loop over at most this many written-out constants is run once per constant.
MAX_UNROLLED = 8


def _unrollable(node: cst.For, iterable: Value) -> bool:
    """A loop over a few constants (`for k in ("image", "mask")`) whose body neither breaks nor
    continues: running it once per constant is exact, and keeps what each key holds apart."""
    if not (few_constants(iterable) and len(iterable.items) <= MAX_UNROLLED and isinstance(node.target, cst.Name)):
        return False
    return not any(isinstance(small, (cst.Break, cst.Continue)) for small, _ in statements_in(node, enter_definitions=False))


def _is_none_test(test: cst.BaseExpression) -> Optional[str]:
    """`name is None`: the name tested."""
    if (isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and isinstance(test.left, cst.Name)
            and isinstance(test.comparisons[0].operator, cst.Is)
            and isinstance(test.comparisons[0].comparator, cst.Name) and test.comparisons[0].comparator.value == "None"):
        return test.left.value
    return None


def _tests_properties_of(left: cst.BaseExpression, right: cst.BaseExpression) -> bool:
    """Does `left` only read properties (`dtype`, `shape`) of tensors the `right` side reads, and
    `torch` constants? (`h.dtype == torch.float16` before `torch.isinf(h).any()`, not `cfg.s_churn > 0`.)"""
    owners, names = set(), set()
    for node in sub_expressions(left):
        if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value != "torch":
            if node.attr.value not in _TENSOR_PROPERTIES:
                return False
            owners.add(node.value.value)
        elif isinstance(node, cst.Name):
            names.add(node.value)
    read = {node.value for node in sub_expressions(right) if isinstance(node, cst.Name)}
    return bool(owners) and names <= owners | {"torch"} and owners <= read


def _type_is_wrapper(test: cst.Comparison) -> List[Tuple[cst.BaseExpression, bool]]:
    """`type(m) in (DataParallel, DDP)`, `type(m) is DataParallel` (and `not in`, `is not`)."""
    left, target = test.left, test.comparisons[0]
    if not (isinstance(left, cst.Call) and isinstance(left.func, cst.Name) and left.func.value == "type"
            and len(left.args) == 1):
        return []
    operator = type(target.operator).__name__
    if operator not in ("In", "NotIn", "Is", "IsNot", "Equal", "NotEqual"):
        return []
    kinds = target.comparator
    if operator in ("In", "NotIn") and not isinstance(kinds, (cst.Tuple, cst.List, cst.Set)):
        return []
    names = isinstance_types(cst.Tuple(kinds.elements) if isinstance(kinds, (cst.List, cst.Set)) else kinds)
    if not all(name in api.PARALLEL_WRAPPER_TYPES for name in names):
        return []
    return [(left.args[0].value, operator in ("In", "Is", "Equal"))]


def narrowed(test: cst.BaseExpression, types: frozenset) -> List[str]:
    """Names a test proves are of one of `types` where it holds: `isinstance(x, np.ndarray)`, alone
    or in an `and`."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return narrowed(test.left, types) + narrowed(test.right, types)
    if (isinstance(test, cst.Call) and isinstance(test.func, cst.Name) and test.func.value == "isinstance"
            and len(test.args) == 2 and isinstance(test.args[0].value, cst.Name)):
        if all(t in types for t in isinstance_types(test.args[1].value)):
            return [test.args[0].value.value]
    if (isinstance(test, cst.Call) and dotted_name(test.func) in api.TENSOR_PREDICATES and len(test.args) == 1
            and isinstance(test.args[0].value, cst.Name) and types is api.TENSOR_TYPES):
        return [test.args[0].value.value]  # `torch.is_tensor(x)`
    return []


def _host_sample(element: Value, origin: cst.CSTNode) -> Value:
    """A numpy frame or record a generator (or an `__iter__`) yields: host data of one step, like a
    loader's batch."""
    if element.kind == HOST and element.literal is None and not element.source:
        return replace(element, source=SOURCE_LOADER, origin=origin, cls=STEP_SAMPLE)
    return element


def _names_settings(node: cst.CSTNode) -> bool:
    """`args.device`, `self.device`: the attribute of settings, a chosen device."""
    key = dotted_name(node) if isinstance(node, cst.Attribute) else None
    return key is not None and api.is_settings_attribute(key)


def same_device_names(test: cst.BaseExpression, holds: bool) -> Optional[Tuple[str, str]]:
    """`a.device == b.device` (holds=True: the right side of `and`) or `a.device != b.device` /
    `not a.device == b.device` (holds=False: the right side of `or`): the names whose devices
    are then equal."""
    while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        holds = not holds
        test = test.expression
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return None
    comparison = test.comparisons[0]
    if isinstance(comparison.operator, cst.NotEqual):
        holds = not holds
    elif not isinstance(comparison.operator, cst.Equal):
        return None
    names = []
    for side in (test.left, comparison.comparator):
        if not (isinstance(side, cst.Attribute) and side.attr.value == "device"):
            return None
        name = dotted_name(side.value)
        if name is None:
            return None
        names.append(name)
    return (names[0], names[1]) if holds else None


def _without_not(test: cst.BaseExpression) -> Tuple[cst.BaseExpression, int]:
    """The test under its `not`s, and how many there were."""
    flips = 0
    while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        flips += 1
        test = test.expression
    return test, flips


def _tested_on_cuda(test: cst.BaseExpression) -> List[Tuple[str, int]]:
    """Names a test asks "is it on CUDA?" of (`t.is_cuda`, `t.device.type == "cuda"`), each with the
    side where the answer is no: 1 for the `else`, 0 for the body (`not t.is_cuda`)."""
    test, flips = _without_not(test)
    subject = None
    if isinstance(test, cst.Attribute) and test.attr.value == "is_cuda":
        subject = test.value
    elif isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and dotted_name(test.left) is not None \
            and dotted_name(test.left).endswith(".device.type") and isinstance(test.comparisons[0].operator, (cst.Equal, cst.NotEqual)):
        if string_value(test.comparisons[0].comparator) != "cuda":
            return []
        flips += isinstance(test.comparisons[0].operator, cst.NotEqual)
        subject = test.left.value.value
    if not isinstance(subject, cst.Name):
        return []
    return [(subject.value, 1 - flips % 2)]


def _asks_cuda_capability(test: cst.BaseExpression) -> bool:
    """`if torch.cuda.is_bf16_supported():`: false, not failing, where there is no CUDA, so the other
    side runs on CPU-only machines and is no guard for them."""
    return any(isinstance(node, cst.Call) and dotted_name(node.func) in api.CUDA_CAPABILITY_QUERIES
               for node in sub_expressions(test))


def _names_a_device(test: cst.BaseExpression) -> bool:
    """Is the test one comparison with a device written out (`x.device == "cuda"`,
    `d != torch.device("cpu")`), whose two sides are surely the accelerator's and the host's?"""
    test, _ = _without_not(test)
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    if not isinstance(test.comparisons[0].operator, (cst.Equal, cst.NotEqual, cst.Is, cst.IsNot)):
        return False
    for side in (test.left, test.comparisons[0].comparator):
        if isinstance(side, cst.Call) and dotted_name(side.func) in ("torch.device", "device") and side.args:
            side = side.args[0].value
        if string_value(side) in ("cuda", "cpu") or (string_value(side) or "").startswith("cuda:"):
            return True
    return False


def host_side_first(test: cst.BaseExpression) -> int:
    """Which side of a device test runs on the accelerator: 0 for `if`'s body, 1 for its `else`.
    `not cuda_ok`, `device.type != "cuda"` and `device.type == "cpu"` put the host first."""
    test, flips = _without_not(test)
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        comparison = test.comparisons[0]
        if "None" in (dotted_name(test.left), dotted_name(comparison.comparator)):
            # `if gpu is not None:` takes the GPU it names; `if args.gpu is None:` is the host's side
            return (flips + isinstance(comparison.operator, (cst.Is, cst.Equal))) % 2
        if isinstance(comparison.operator, (cst.NotEqual, cst.IsNot)):
            flips += 1
        if "cpu" in (string_value(test.left), string_value(comparison.comparator)):
            flips += 1
    return flips % 2


def _step_calls(suite: cst.BaseSuite) -> List[cst.Call]:
    """The `x.step(...)` calls a block makes in its own statements."""
    found = []
    for statement in suite.body:
        for small in (statement.body if isinstance(statement, cst.SimpleStatementLine) else ()):
            call = small.value if isinstance(small, cst.Expr) else None
            if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value == "step":
                found.append(call)
    return found


def _moves_between_iterations(entry: Env, after: Env) -> bool:
    """Did one iteration leave a tensor or module of the entry state on a device that conflicts with
    where it entered?"""
    for key, now in after.values.items():
        if now.kind not in (TENSOR, MODULE) or not now.device.known:
            continue
        before = entry.values.get(key)
        if before is None and key.count(".") == 1:
            # a field the iteration set (a callee's `self.confmat = torch.zeros(...)`): against its module
            before = entry.values.get(key.split(".", 1)[0])
            if before is None or before.kind != MODULE:
                continue
        if before is not None and before.kind in (TENSOR, MODULE) and conflicts(before.device, now.device):
            return True
    return False


def _skips_rest_off_interval(statement: cst.CSTNode) -> bool:
    """`if step % n != 0: return` / `if not should_log: continue`, with no else: the statements after
    it run only at the interval."""
    if not isinstance(statement, cst.If) or statement.orelse is not None:
        return False
    body = statement.body.body
    last = body[-1] if body else None
    if not (isinstance(last, cst.SimpleStatementLine) and isinstance(last.body[-1], (cst.Return, cst.Continue))):
        return False
    return _off_interval(statement.test)


def _off_interval(test: cst.BaseExpression) -> bool:
    """Does the test hold between intervals (`i % n != 0`, `i % n`, `not should_log`)?"""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return is_interval_test(test.expression) and not _off_interval(test.expression)
    if isinstance(test, cst.BinaryOperation) and isinstance(test.operator, cst.Modulo):
        return True
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and is_interval_test(test.left):
        target = test.comparisons[0]
        return isinstance(target.operator, cst.NotEqual) and integer_value(target.comparator) == 0
    return False


#: The class of a tensor's `.shape`.
_SIZE = "torch.Size"


def _lazy_initialisation(node: cst.If) -> bool:
    """`if self._step_index is None: self._step_index = ...`: the body runs once, the first time
    (a cache filled on first use), not on every step."""
    test = node.test
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1
            and isinstance(test.comparisons[0].operator, cst.Is) and dotted_name(test.comparisons[0].comparator) == "None"):
        return False
    field = dotted_name(test.left)
    # (a field of an object lives on between calls; a local name, `if dim_size is None: dim_size = ...`,
    # is filled again on every call and its body is per-step work)
    return field is not None and "." in field and any(
        isinstance(small, (cst.Assign, cst.AnnAssign)) and any(
            dotted_name(target) == field for target in
            ([t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]))
        for line in node.body.body if isinstance(line, cst.SimpleStatementLine) for small in line.body)


def _leaves(suite: cst.BaseSuite, returns: bool = True) -> bool:
    """Does a branch leave the loop around it (`break`, `raise`, and `return` when `returns`) in its
    own statements?"""
    leaving = (cst.Break, cst.Return, cst.Raise) if returns else (cst.Break, cst.Raise)
    for statement in suite.body:
        smalls = statement.body if isinstance(statement, cst.SimpleStatementLine) else (statement,)
        if any(isinstance(s, leaving) for s in smalls):
            return True
    return False


def _part_of(container: Value) -> Value:
    """A part of an nn.ModuleList/Sequential: where the container is (it moves them all), and, when
    the parts are modules of this file, one of them (so calling it runs its `forward`)."""
    part = container.items[0] if container.items else None
    if part is not None and part.kind == MODULE and part.cls:
        return part.with_device(container.device, container.origin, via=container.via)
    return Value(kind=MODULE, device=container.device, origin=container.origin, via=container.via, stateful=None)


def _spelled(node: cst.BaseExpression, value: Value) -> Value:
    """A device string compared as text (`device.type == "cuda"`): its literal, to decide the test
    when the other side is known (a device chosen as `torch.device("cpu")`)."""
    if value.kind == DEVICE and value.literal is None and isinstance(node, cst.SimpleString):
        text = string_value(node)
        return replace(value, literal=(text,)) if text is not None else value
    return value


def _literal_key(node: cst.Subscript) -> Optional[str]:
    """`d["labels"]`: the key, when it is one string spelled out."""
    if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
        return None
    return string_value(node.slice[0].slice.value)


def _operator_text(operator: cst.CSTNode) -> str:
    return {
        "Add": "+", "Subtract": "-", "Multiply": "*", "Divide": "/", "FloorDivide": "//",
        "Modulo": "%", "Power": "**", "MatrixMultiply": "@", "BitAnd": "&", "BitOr": "|",
        "BitXor": "^", "LeftShift": "<<", "RightShift": ">>",
        "AddAssign": "+", "SubtractAssign": "-", "MultiplyAssign": "*", "DivideAssign": "/",
        "FloorDivideAssign": "//", "ModuloAssign": "%", "PowerAssign": "**",
        "MatrixMultiplyAssign": "@", "BitAndAssign": "&", "BitOrAssign": "|", "BitXorAssign": "^",
        "Equal": "==", "NotEqual": "!=", "LessThan": "<", "LessThanEqual": "<=", "GreaterThan": ">",
        "GreaterThanEqual": ">=",
    }.get(type(operator).__name__, "op")


def _widen(head: Env, after: Env) -> Env:
    """Give up on names that still change after the iteration budget."""
    for key in list(after.values):
        if head.values.get(key) != after.values.get(key):
            after.values[key] = UNKNOWN_VALUE
    return after

