"""Which accelerator a placement asks for, and whether anything made it optional.

Mixed into `Interpreter`.  Every placement (a move, a factory's `device=`, a
module built on a device) reports here with the device it resolved to; this
module records the evidence the parallel and portability rules read: the
root of an accelerator asked for with no fallback, placements on plain
``"cuda"`` in distributed code, and the first point where CUDA is initialised.
"""
from __future__ import annotations

from typing import Dict, Iterator, List, Optional, Tuple

import libcst as cst

from . import torch_api as api
from .facts import UnguardedAccelerator, VisibleDevicesTooLate
from .lattice import ANY, CUDA, DEVICE, PER_RANK, REF, SELECTED, SYMBOLIC, UNGUARDED, Device, Value
from .names import child_nodes, dotted_name, last_identifier, string_value, sub_expressions, walk
from .project import PROJECT_SOURCE


class DeviceChoiceTracker:
    """Evidence about device choices, per interpreted scope."""

    cuda_initialised: Optional[cst.CSTNode]
    chosen_device: str
    #: a caller in context offers a CPU path (`main()` picks `--device cpu` and calls the benchmark),
    #: or this code joined a gloo process group
    inherited_cpu_path: bool = False

    def note_placement(self, device: Device, device_value: Optional[Value], use: cst.CSTNode, env,
                       bare_cuda: bool = False) -> None:
        """Something is placed on `device`; `device_value` is the value that named it, if any."""
        if device.kind == SYMBOLIC or device.kind == SELECTED:
            self.chosen_device = self.chosen_device or (device.key or "device")
            self.program.facts.requirements.runs_without_cuda = True  # a device the code chose
        self.note_batch_encoding_move(use, env)
        if not device.is_accelerator:
            return
        if self.cuda_initialised is None and device.kind in (CUDA, UNGUARDED, SELECTED):
            self.cuda_initialised = use
        evidence = self.program.facts.distributed
        root = device.root or (device_value.origin if device_value is not None and device_value.origin is not None else use)
        per_rank = device.key == PER_RANK or _per_rank(use, root)
        if per_rank:  # (any run shows what the code can do: a silent generic one too)
            evidence.per_rank_placements = True
        if not self.recording:
            return
        # (a bare `.cuda()` where no GPU was chosen is GPU 0, in every process)
        unchosen = device.index is None or (bare_cuda and env.current_gpu is not None and env.current_gpu.assumed)
        if device.kind in (CUDA, UNGUARDED, SELECTED) and unchosen and not per_rank:
            evidence.shared_placements.append(root)
        imported = device_value is not None and device_value.source == PROJECT_SOURCE
        if (device.kind == UNGUARDED and not env.guarded and not imported  # an imported root is reported at home
                and not self.runs_only_with_cuda(use)):
            chosen = self.chosen_device_in_scope(env) if bare_cuda else ""
            self.program.facts.unguarded.append(UnguardedAccelerator(root, use, chosen, bare_cuda))

    def chosen_device_in_scope(self, env) -> str:
        """A device the code chose (SELECTED, a parameter, `args.device`) that a `.cuda()` ignores."""
        if self.chosen_device:
            return self.chosen_device
        for values in [env.values] + [outer.values for outer in self.scope.outer]:
            for key, value in values.items():
                if value.kind == DEVICE and value.device.kind in (SELECTED, SYMBOLIC):
                    return key
                if value.kind == ANY and not value.device.known and api.is_device_name(key) and "." not in key:
                    if key in self.parameter_names:
                        return key
        return ""

    def offers_cpu_path(self) -> bool:
        """Can the code running now go without CUDA, as far as it has run? Its function tests for
        CUDA or names the CPU, places work on a device it was given or chose, or a caller in
        context does; at module level, the file does."""
        if self.inherited_cpu_path or self.chosen_device:
            return True
        node = self.scope.node
        if node is None:
            return self.program.facts.requirements.runs_without_cuda
        # (a method of a class that chooses between CUDA and the CPU, `self.name = "cuda" if
        # torch.cuda.is_available() else "cpu"`, runs on either)
        owner = self.scope.owner
        return self.program.offers_cpu_path(node) or (owner is not None and self.program.offers_cpu_path(owner.node))

    def settle_cuda_calls(self, env) -> None:
        """When the scope is done: its unguarded CUDA-only calls are portability bugs if it can run
        without CUDA (a device chosen by availability in scope counts too)."""
        if not self.unguarded_cuda_calls:
            return
        if self.offers_cpu_path() or any(
                value.kind == DEVICE and value.device.kind == SELECTED
                for values in [env.values] + [outer.values for outer in self.scope.outer] for value in values.values()):
            self.program.facts.requirements.cpu_capable_calls.update(id(node) for node in self.unguarded_cuda_calls)

    def note_cuda_call(self, qualname: str, node: cst.CSTNode) -> None:
        """Every call of a library or project API passes here, before its semantics apply."""
        if self.cuda_initialised is None and qualname.startswith(api.CUDA_NAMESPACE) and qualname not in api.CUDA_LAZY_SAFE:
            self.cuda_initialised = node
        requirements = self.program.facts.requirements
        if api.is_cuda_only_library(qualname):
            requirements.cuda_by_nature = requirements.cuda_by_nature or node
        elif qualname in api.CUDA_ONLY_APIS:
            if self.recording and self.runs_only_with_cuda(node):
                requirements.cuda_only_code.add(id(node))
        elif qualname in api.TORCH_SAVE or qualname in api.TORCH_LOAD:
            self.note_checkpoint(qualname in api.TORCH_SAVE, node)
        elif qualname in api.PROCESS_GROUP_INIT:
            backend = _backend(node)
            if backend and self.scope.owner is None and self.scope.method:
                requirements.group_backends[self.scope.method] = backend
            if backend and not backend.startswith("nccl"):
                self.inherited_cpu_path = True  # a gloo group: this code runs on CPUs too
        else:
            backend = self.program.place.group_backend(qualname)
            if backend.startswith("nccl"):
                # A project helper that starts an NCCL process group: as if it were started here.
                evidence = self.program.facts.distributed
                evidence.setup = evidence.setup or node
                evidence.requires_accelerator = True
            elif backend:  # a gloo group: the program runs on CPUs too
                self.inherited_cpu_path = True
                requirements.runs_without_cuda = True

    # --- code that needs CUDA anyway ------------------------------------------------

    def runs_only_with_cuda(self, node: cst.CSTNode) -> bool:
        """Does the code around `node` run only where CUDA exists, whatever this file does?

        Inside the body of a test on accelerator-only state (`if hasattr(self, "final_offload_hook")`),
        in a function or class whose decorators skip it without a GPU (`@RunIf(min_cuda_gpus=1)`),
        and in a helper that builds CUDA events or streams and is not called in its own file (a
        timing utility: its callers choose to use it).
        """
        for child, parent in _ancestors(self.program.module, node):
            if isinstance(parent, cst.If) and child is parent.body and _tests_accelerator_state(parent.test):
                return True
            if isinstance(parent, (cst.FunctionDef, cst.ClassDef)) and _skipped_without_accelerator(parent):
                return True
            if isinstance(parent, cst.FunctionDef) and self._cuda_helper(parent, node):
                return True
        return False

    def _cuda_helper(self, function: cst.FunctionDef, node: cst.CSTNode) -> bool:
        name = function.name.value
        if name.startswith("test"):
            return False  # a test is an entry point: it runs wherever the suite runs
        owner = _owner_class(self.program.module, function)
        uses = self.program.uses_of(owner.name.value if owner is not None else name)
        return uses <= 1 and any(self.resolve(call) in api.CUDA_BY_NATURE_OBJECTS for call in _calls_in(function))

    def resolve(self, call: cst.Call) -> str:
        """The qualified name of a call's function through the file's imports (`torch.cuda.Event`)."""
        name = dotted_name(call.func) or ""
        head, _, rest = name.partition(".")
        bound = self.program.module_env.values.get(head)
        if bound is None or bound.kind != REF:
            return name
        return f"{bound.cls}.{rest}" if rest else bound.cls

    # --- checkpoints ------------------------------------------------------------------

    def note_checkpoint(self, saving: bool, node: cst.CSTNode) -> None:
        """A checkpoint that this scope wrote earlier in the same run is read back on the machine
        that wrote it, from data it had there: loading it needs no `map_location`."""
        if not self.recording or not isinstance(node, cst.Call):
            return
        path = _argument(node, 1 if saving else 0, "f")
        if path is None:
            return
        requirements = self.program.facts.requirements
        key = (self.scope.owner.name if self.scope.owner is not None else "", self.scope.method,
               " ".join(self.program.module.code_for_node(path).split()))
        if saving:
            requirements.checkpoints_written.add(key)
        elif key in requirements.checkpoints_written:
            requirements.own_checkpoints.add(id(node))

    # --- BatchEncoding ----------------------------------------------------------------

    def note_batch_encoding_move(self, use: cst.CSTNode, env) -> None:
        """`inputs.to(device)` where `inputs = tokenizer(..., return_tensors="pt")` two lines up: a
        BatchEncoding, moved in place, even when the tokenizer is a value the analysis cannot see."""
        if not (self.recording and isinstance(use, cst.Call) and isinstance(use.func, cst.Attribute)
                and use.func.attr.value == "to" and isinstance(use.func.value, cst.Name)):
            return
        name = use.func.value.value
        value = env.values.get(name)
        if value is None or value.kind != ANY or not api.is_tensor_name(name):
            return  # only an unknown value named like a tensor is taken for one (DEV104)
        binding = _last_binding(self.program.module, use, name)
        if isinstance(binding, cst.Call) and api.returns_batch_encoding(
                last_identifier(binding.func), [arg.keyword.value for arg in binding.args if arg.keyword is not None]):
            self.program.facts.requirements.in_place_moves.add(id(use))

    def note_environment_write(self, key_node: Optional[cst.BaseExpression], node: cst.CSTNode) -> None:
        """`os.environ["CUDA_VISIBLE_DEVICES"] = ...` after CUDA has started reads nothing."""
        if key_node is None or string_value(key_node) != api.VISIBLE_DEVICES:
            return
        if self.cuda_initialised is not None and self.recording:
            self.program.facts.visible_devices_late.append(VisibleDevicesTooLate(node, self.cuda_initialised))


def environment_key(target: cst.Subscript) -> Optional[cst.BaseExpression]:
    """The key of `os.environ[KEY]`, or None for any other subscript."""
    if dotted_name(target.value) != "os.environ" or len(target.slice) != 1:
        return None
    index = target.slice[0].slice
    return index.value if isinstance(index, cst.Index) else None


# --- the syntax around a node -------------------------------------------------------------

#: Parent links of the last module asked about (files are analysed one at a time); built only
#: when a question needs them, so files without such a question never pay for the walk.
_PARENTS: List[object] = [None, {}]


def _parents(module: cst.Module) -> Dict[int, cst.CSTNode]:
    if _PARENTS[0] is not module:
        parents: Dict[int, cst.CSTNode] = {}
        stack: List[cst.CSTNode] = [module]
        while stack:
            current = stack.pop()
            for child in child_nodes(current):
                parents[id(child)] = current
                stack.append(child)
        _PARENTS[0], _PARENTS[1] = module, parents
    return _PARENTS[1]


def _ancestors(module: cst.Module, node: cst.CSTNode) -> Iterator[Tuple[cst.CSTNode, cst.CSTNode]]:
    """(child, parent) pairs from `node` up to the module."""
    parents = _parents(module)
    child = node
    parent = parents.get(id(child))
    while parent is not None:
        yield child, parent
        child, parent = parent, parents.get(id(parent))


def _owner_class(module: cst.Module, function: cst.FunctionDef) -> Optional[cst.ClassDef]:
    """The class a method is defined in (directly), or None."""
    for _, parent in _ancestors(module, function):
        if isinstance(parent, cst.ClassDef):
            return parent
        if isinstance(parent, cst.FunctionDef):
            return None
    return None


def _words(expression: cst.BaseExpression) -> Iterator[str]:
    """Identifiers, attribute names, strings and keyword names of an expression."""
    for node in sub_expressions(expression):
        if isinstance(node, cst.Name):
            yield node.value
        elif isinstance(node, cst.Attribute):
            yield node.attr.value
        elif isinstance(node, cst.SimpleString):
            yield node.value
        elif isinstance(node, cst.Call):
            yield from (arg.keyword.value for arg in node.args if arg.keyword is not None)


def _skipped_without_accelerator(definition) -> bool:
    """`@RunIf(min_cuda_gpus=1)`, `@pytest.mark.skipif(not torch.cuda.is_available(), ...)`."""
    return any(api.is_accelerator_only_marker(word) for decorator in definition.decorators
               for word in _words(decorator.decorator))


def _tests_accelerator_state(test: cst.BaseExpression) -> bool:
    """`hasattr(self, "final_offload_hook")`, `if self.hf_device_map:` (not negated: the body of
    `if not hasattr(...)` is the path without offloading)."""
    if any(isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not) for node in sub_expressions(test)):
        return False
    for word in _words(test):
        if api.names_accelerator_state(word):
            return True
    return False


def _calls_in(node: cst.CSTNode) -> Iterator[cst.Call]:
    # (nested functions, classes and lambdas are their own scopes)
    scopes = (cst.FunctionDef, cst.ClassDef, cst.Lambda)
    return (current for current in walk(node, into=lambda inner: not isinstance(inner, scopes))
            if isinstance(current, cst.Call))


def _argument(call: cst.Call, position: int, keyword: str) -> Optional[cst.BaseExpression]:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg.value
    positional = [arg for arg in call.args if arg.keyword is None and not arg.star]
    return positional[position].value if len(positional) > position else None


def _backend(call: cst.CSTNode) -> str:
    """`init_process_group("nccl")` -> "nccl"; "" when the call does not spell it out."""
    if not isinstance(call, cst.Call):
        return ""
    backend = _argument(call, 0, "backend")
    return (string_value(backend) or "") if backend is not None else ""


def _per_rank(use: cst.CSTNode, root: cst.CSTNode) -> bool:
    """A device computed from the process's rank (`.to(local_rank)`,
    `torch.device("cuda:" + str(rank % n))`): every process picks its own GPU."""
    expressions: List[cst.BaseExpression] = []
    if isinstance(root, cst.Call) and root is not use:
        expressions += [arg.value for arg in root.args]
    if isinstance(use, cst.Call):
        moves = isinstance(use.func, cst.Attribute) and use.func.attr.value in api.MOVE_METHODS
        expressions += [arg.value for arg in use.args
                        if (arg.keyword is None and moves) or (arg.keyword is not None and arg.keyword.value == "device")]
    for expression in expressions:
        for node in sub_expressions(expression):
            text = node.value if isinstance(node, (cst.Name, cst.SimpleString)) else (
                node.attr.value if isinstance(node, cst.Attribute) else "")
            if text and api.is_rank_name(text):
                return True
    return False


def _binds(statement: cst.CSTNode, name: str) -> bool:
    """Does a statement assign `name` anywhere (conservatively, as any target)?"""
    stack = [statement]
    while stack:
        current = stack.pop()
        if isinstance(current, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.For, cst.WithItem, cst.NamedExpr)):
            target = getattr(current, "target", None) or getattr(current, "asname", None)
            if target is not None and any(isinstance(n, cst.Name) and n.value == name for n in _target_names(target)):
                return True
        stack.extend(child_nodes(current))
    return False


def _target_names(target: cst.CSTNode) -> Iterator[cst.CSTNode]:
    stack = [target]
    while stack:
        current = stack.pop()
        yield current
        if isinstance(current, (cst.Tuple, cst.List, cst.AsName, cst.Element, cst.StarredElement)):
            stack.extend(child_nodes(current))


def _last_binding(module: cst.Module, node: cst.CSTNode, name: str) -> Optional[cst.BaseExpression]:
    """The value of the plain `name = value` that last binds `name` before the statement holding
    `node`, in the same block or the blocks around it; None when it is not that simple."""
    for child, parent in _ancestors(module, node):
        if isinstance(parent, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return None
        body = parent.body if isinstance(parent, (cst.IndentedBlock, cst.Module)) else None
        position = next((i for i, s in enumerate(body) if s is child), None) if isinstance(body, (list, tuple)) else None
        if position is None:
            continue
        for statement in reversed(body[:position]):
            if not _binds(statement, name):
                continue
            if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
                small = statement.body[0]
                if (isinstance(small, cst.Assign) and len(small.targets) == 1
                        and isinstance(small.targets[0].target, cst.Name)):
                    return small.value
            return None
    return None
