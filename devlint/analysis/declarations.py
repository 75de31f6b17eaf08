"""What the file declares: its functions and classes, as the analysis records them.

A `FunctionInfo` or `ClassInfo` is made once per definition and holds what was learnt
about it (its summary, its attributes, its methods).  `ProgramServices` is what the
interpreter may ask of the file's `Program`: spelled out here so that the interpreter
and the context runner depend on this interface, not on `program.py`, which builds them.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Protocol, Sequence, Set

import libcst as cst

from . import torch_api as api
from .call_order import calls_in
from .env import Env
from .facts import FileFacts
from .function_syntax import FunctionSyntax
from .lattice import Device, Value
from .names import dotted_name
from .project import ProjectPlace


class FunctionInfo:
    def __init__(self, node: cst.FunctionDef, owner: Optional["ClassInfo"], outer: List[Env],
                 syntax: Optional[FunctionSyntax] = None) -> None:
        self.node = node
        #: what its text contains, from the module's one walk (`function_syntax`)
        self._syntax = syntax
        self.owner = owner
        self.outer = outer
        self.result: Optional[Value] = None
        self.running = False
        self.final_env: Optional[Env] = None
        self._trains: Optional[bool] = None
        self._moves: Optional[Set[str]] = None
        self.builds_parts: Optional[bool] = None  # see `_builds_submodules`

    @property
    def name(self) -> str:
        return self.node.name.value

    @property
    def is_static(self) -> bool:
        """A `@staticmethod`: called on an object, it gets no receiver."""
        return any(dotted_name(d.decorator) == "staticmethod" for d in self.node.decorators)

    @property
    def calls(self) -> List[cst.Call]:
        """Every call in the body, nested functions' included (they may run)."""
        if self._syntax is None:  # (a function the module's index has not seen: walk it alone)
            self._syntax = FunctionSyntax(calls=list(calls_in(self.node.body)))
        return self._syntax.calls

    @property
    def handled_parameters(self) -> Set[str]:
        """Parameters a call may move: the body moves them (`model.to(...)`) or hands them, as
        they are, to other code (`setup(model)`)."""
        if self._moves is None:
            params = {p.name.value for p in self.parameters()}
            self._moves = set()
            for call in self.calls:
                self._moves |= _moved_or_passed(call, params)
        return self._moves

    @property
    def trains(self) -> bool:
        """A training step: `.backward()` outside any loop. A loop calling it is a training loop."""
        if self._trains is None:
            # An LBFGS-style `closure` is called by `optimizer.step(closure)`, which reads its loss as
            # a float anyway: syncing there costs nothing extra.
            self._trains = self.name != "closure" and _calls_backward(self.node.body.body)
        return self._trains

    def parameters(self) -> List[cst.Param]:
        params = self.node.params
        return list(params.posonly_params) + list(params.params) + list(params.kwonly_params)


class ClassInfo:
    def __init__(self, node: cst.ClassDef, outer: List[Env], syntax: Dict[int, FunctionSyntax] = None) -> None:
        self.node = node
        self.name = node.name.value
        self.outer = outer
        self.is_module: Optional[bool] = None
        self.stateful: Optional[bool] = None
        self.attrs: Dict[str, Value] = {}
        self.buffers: Set[str] = set()
        self.reported: Set[str] = set()
        self.unknown_submodule = False
        #: a method of the class registers a buffer (by a name known only at run time, too: torchmetrics'
        #: `self.add_state(name, default)` helper), so its instances hold state that `.to()` moves
        self.registers_buffers = False
        self.registers_manually = False  # __init__ calls add_module/register_module/register_parameter
        self.mapping = False  # extends dict and keeps its lookups: an instance is the dict it was built from
        #: attributes `__init__` also assigns a module to (`self.lins = nn.ModuleList(self.lins)` on a path)
        self.module_assigned: Set[str] = set()
        self.moves_itself: Optional[bool] = None  # a method calls `self.to(...)` (see `_acts_as_module`)
        self.methods: Dict[str, FunctionInfo] = {}
        self.init_seed: Optional[Dict[str, Value]] = None  # what `__init__` inherits from base classes
        self.moves_input: Optional[bool] = None  # its `forward` moves its first input (see `moves_own_input`)
        self.state = "new"  # new -> running -> done
        #: its `forward` moves its own state to where an input is (see `program._follows_input`)
        self.follows_input: Optional[bool] = None
        #: a mapping class (`mapping`) that extends `dict` itself, not a wrapper of one (`UserDict`)
        self.is_dict = False
        for statement in node.body.body:
            if isinstance(statement, cst.FunctionDef):
                self.methods[statement.name.value] = FunctionInfo(statement, self, outer, (syntax or {}).get(id(statement)))

def _moved_or_passed(call: cst.Call, params: Set[str]) -> Set[str]:
    found = {arg.value.value for arg in call.args if isinstance(arg.value, cst.Name) and arg.value.value in params}
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value in api.MOVE_METHODS:
        root = (dotted_name(func.value) or "").split(".", 1)[0]
        if root in params:
            found.add(root)
    return found


def _calls_backward(body) -> bool:
    """Does a function body call `.backward()` outside loops (directly, or in if/with/try blocks)?"""
    for statement in body:
        if isinstance(statement, (cst.SimpleStatementLine, cst.BaseSmallStatement)):
            for small in statement.body if isinstance(statement, cst.SimpleStatementLine) else (statement,):
                call = small.value if isinstance(small, cst.Expr) else None
                if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value == "backward":
                    return True
        elif isinstance(statement, (cst.If, cst.With, cst.Try)):
            inner = list(statement.body.body)
            orelse = statement.orelse if isinstance(statement, cst.If) else None
            if isinstance(orelse, cst.Else):
                inner += list(orelse.body.body)
            elif isinstance(orelse, cst.If):
                inner.append(orelse)
            if _calls_backward(inner):
                return True
    return False


class ProgramServices(Protocol):
    """What the interpreter and the context runner ask of the file's `Program`.

    `interp`/`caller` arguments are the `Interpreter` asking; `scope` its `Scope`."""

    module: cst.Module
    module_env: Env
    place: ProjectPlace
    facts: FileFacts
    contexts: Any  # the `ContextRunner` that interprets calls in context
    classes: Dict[str, ClassInfo]
    argument_defaults: Dict[str, object]
    argument_devices: Dict[str, Value]
    batch_loaders: Dict[int, cst.CSTNode]
    loader_options: Dict[int, tuple]
    interval_predicates: Set[str]
    wrapper_predicates: Set[str]
    reported: Set[int]
    hot_reported: Set[tuple]
    unregistered_used: Set[int]
    wrap_device_ids: Dict[int, Any]
    wrapper_fields: Set[Any]
    lambda_scopes: Dict[int, Env]
    lambdas_running: Set[int]
    made_beside_device: Set[int]
    asks_availability: bool
    cuda_without_availability: bool
    module_skipped_without_accelerator: bool

    @property
    def rebound_fields(self) -> frozenset: ...

    # --- what the file declares
    def declare_function(self, node: cst.FunctionDef, scope: Any, env: Env) -> Value: ...
    def declare_class(self, node: cst.ClassDef, scope: Any, env: Env) -> Value: ...
    def ensure_class(self, info: ClassInfo) -> ClassInfo: ...
    def defines(self, cls: str, method: str) -> bool: ...
    def inherits_unseen(self, cls: str) -> bool: ...
    def class_attribute(self, base: Value, attr: str) -> Value: ...
    def self_device(self) -> Device: ...
    def moves_own_input(self, info: ClassInfo) -> bool: ...
    def builds_parts(self, info: FunctionInfo) -> bool: ...
    def accelerator_only(self, info: FunctionInfo, called_from_cpu_path: bool = False) -> bool: ...
    def syntax_fact(self, node: cst.CSTNode, kind: str, compute: Any) -> Any: ...
    def offers_cpu_path(self, function: cst.FunctionDef) -> bool: ...
    def uses_of(self, name: str) -> int: ...

    # --- calls of the file's own code
    def arguments_it_may_move(self, callee: Value, args) -> list: ...
    def method_arguments_it_may_move(self, receiver: Value, name: str, args) -> list: ...
    def call_function(self, callee: Value, node: cst.Call, args, guarded: bool = False, recording: bool = True,
                      hot: str = '', caller=None, env: Optional[Env] = None) -> Value: ...
    def call_method(self, receiver: Value, name: str, node: cst.Call, args, caller=None,
                    env: Optional[Env] = None) -> Value: ...
    def call_super(self, name: str, node: cst.Call, args: Sequence[Any], caller: Any, env: Env) -> Optional[Value]: ...
    def call_class_method(self, cls: Value, name: str, node: cst.Call, args, caller, env: Env) -> Value: ...
    def call_forward(self, callee: Value, node: cst.Call, args, caller, env: Env) -> Optional[Value]: ...
    def instantiate(self, callee: Value, node: cst.Call, args, env: Env, caller=None, of_several: bool = False) -> Value: ...
    def parallel_base(self, name: str, caller) -> Optional[str]: ...
    def dataset_item(self, dataset: Value, node: cst.CSTNode, caller, env: Env) -> Optional[Value]: ...
    def iterate(self, obj: Value, node: cst.CSTNode, caller, env: Env) -> Optional[Value]: ...
    def follows_module(self, value: Value, info: ClassInfo, device: Device,
                       moved_at: Optional[cst.CSTNode] = None) -> Value: ...

    # --- what the interpreter saw, for the rules
    def first_report(self, node: cst.CSTNode) -> bool: ...
    def same_batch(self, origin: Optional[cst.CSTNode], part: cst.CSTNode) -> None: ...
    def note_buffer(self, interp: Any, name_node, tensor: Value, env: Env) -> None: ...
    def note_container_append(self, interp: Any, receiver: Value, receiver_node, added: Value, node) -> None: ...
    def note_container_store(self, interp: Any, target: cst.Subscript, value: Value, env: Env, statement=None) -> None: ...
    def note_module_attribute(self, interp: Any, target: cst.Attribute, value: Value, env: Env, statement) -> None: ...
    def note_self_call(self, interp: Any, receiver_node, method: str) -> None: ...
