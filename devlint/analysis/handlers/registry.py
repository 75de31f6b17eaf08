"""Registries of API handlers, and the call-site context each handler is given."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, List, Optional, Protocol, Sequence, Set, Tuple, Union

import libcst as cst

from ..call_args import Arg
from ..declarations import ProgramServices
from ..env import Env
from ..lattice import UNKNOWN_VALUE, Device, Value


class Evaluator(Protocol):
    """The services of the interpreter a handler may use: evaluating, placing, recording facts.

    Spelled out so that handlers depend on this interface, not on the interpreter's classes."""

    program: ProgramServices  # the file's `Program`: its facts, classes and settings
    scope: Any        # the function being interpreted (`Scope`)
    recording: bool
    unguarded_cuda_calls: List[cst.CSTNode]
    pinning_asked: int  # inside `if <the program's pinning option>:`

    @property
    def factory_source(self) -> str: ...
    def eval(self, node: cst.BaseExpression, env: Env) -> Value: ...
    def element_of(self, iterable: Value, node: cst.BaseExpression, origin: cst.CSTNode, env: Optional[Env] = None) -> Value: ...
    def attribute_of(self, base: Value, attr: str, node: cst.CSTNode, env: Env) -> Value: ...
    def note_wrapper_attribute(self, base: Value, attr: str, node: cst.CSTNode,
                               model: Optional[cst.BaseExpression] = None,
                               fallback: Optional[cst.BaseExpression] = None) -> None: ...
    def device_argument(self, expr: cst.BaseExpression, value: Value, env: Env) -> Optional[Device]: ...
    def placement(self, arg: Arg, use: cst.CSTNode, env: Env) -> Optional[Device]: ...
    def accelerator_literal(self, device: Device, env: Env, root: Optional[cst.CSTNode] = None) -> Device: ...
    def note_placement(self, device: Device, device_value: Optional[Value], use: cst.CSTNode, env: Env,
                       bare_cuda: bool = False) -> None: ...
    def move_target(self, method: str, node: cst.Call, args: Sequence[Arg], env: Env) -> Optional[Device]: ...
    def construction_device(self, args: Sequence[Arg], env: Env, node: cst.CSTNode) -> Device: ...
    def chosen_device_in_scope(self, env: Env) -> str: ...
    def check_operands(self, node: cst.CSTNode, operands: List[Tuple[cst.CSTNode, Value]], operation: str,
                       arithmetic: bool) -> Value: ...
    def operands_of(self, args: Sequence[Arg]) -> List[Tuple[cst.CSTNode, Value]]: ...
    def check_host_conversion(self, expr: cst.CSTNode, value: Value, node: cst.CSTNode, api_name: str, env: Env) -> None: ...
    def first_time(self, kind: str, value: Value, node: cst.CSTNode) -> bool: ...
    def record_misuse(self, node: cst.CSTNode, kind: str, api_name: str, device: str = "") -> None: ...
    def note_created(self, ident: int) -> None: ...
    def note_device_state(self, value: Value) -> None: ...
    def note_environment_write(self, key_node: Optional[cst.BaseExpression], node: cst.CSTNode) -> None: ...
    def note_host_work(self, expr: cst.CSTNode, data: Value, node: cst.Call) -> None: ...
    def note_host_factory(self, node: cst.Call, env: Env) -> None: ...
    def note_preprocessing(self, qualname: str, args: Sequence[Arg], node: cst.Call) -> None: ...
    def note_settings_default(self, key: Optional[str], default: Optional[Arg], what: str) -> None: ...
    def note_step(self, trains: bool) -> None: ...
    def note_sync(self, expr: cst.CSTNode, value: Value, node: cst.CSTNode, how: str) -> None: ...
    def note_moved(self, ident: int, moved: Value, env: Env, weak: bool = False) -> None: ...
    def call_bound(self, callee: Value, func: cst.BaseExpression, node: cst.Call, args: List[Arg], env: Env) -> Value: ...
    def module_call(self, callee: Value, callee_node: cst.CSTNode, node: cst.Call, args: Sequence[Arg], operation: str,
                    env: Optional[Env] = None) -> Value: ...
    def note_tensor_move(self, receiver_node: cst.CSTNode, receiver: Value, node: cst.Call, target: Device,
                         args: Sequence[Arg]) -> None: ...


@dataclass(frozen=True)
class ApiCall:
    """One call a handler is asked about: what is called, with what, and in which state.

    `name` is what the handler was found by: the qualified name of a function (`torch.zeros`)
    or a method's name (`to`), with `receiver` the value the method is called on."""

    name: str
    node: cst.Call
    args: Sequence[Arg]
    env: Env
    ev: Evaluator
    receiver: Value = UNKNOWN_VALUE
    receiver_node: Optional[cst.BaseExpression] = None
    discarded: bool = False  # the call is a statement of its own: its result is dropped
    #: functions: the value of what was called, when it was named elsewhere (`Tensor = torch.cuda.FloatTensor`)
    callee: Value = UNKNOWN_VALUE

    @property
    def short_name(self) -> str:
        return self.name.rsplit(".", 1)[-1]

    @property
    def first(self) -> Value:
        return self.args[0].value if self.args else UNKNOWN_VALUE

    def keyword(self, name: str) -> Optional[Arg]:
        return next((a for a in self.args if a.keyword == name), None)


Handler = Callable[[ApiCall], Optional[Value]]
Names = Union[str, Iterable[str]]


class Registry:
    """Handlers by API name, in the order they were registered.

    A handler is registered for a set of names (`on`) or for every name a predicate accepts
    (`when`, for families such as `torch.nn.*` classes). The handlers a name gets are those whose
    names or predicates match it, in registration order; the first that returns a value answers.
    Which handlers a name gets is computed once per name."""

    def __init__(self, what: str) -> None:
        self.what = what
        self._entries: List[Tuple[Union[Set[str], Callable[[str], bool]], Handler]] = []
        self._by_name: Dict[str, Tuple[Handler, ...]] = {}

    def on(self, *names: Names) -> Callable[[Handler], Handler]:
        wanted: Set[str] = set()
        for group in names:
            wanted.update((group,) if isinstance(group, str) else group)
        if not wanted:
            raise ValueError(f"{self.what}: a handler registered for no name")

        def register(handler: Handler) -> Handler:
            self._entries.append((wanted, handler))
            self._by_name.clear()
            return handler
        return register

    def when(self, predicate: Callable[[str], bool]) -> Callable[[Handler], Handler]:
        def register(handler: Handler) -> Handler:
            self._entries.append((predicate, handler))
            self._by_name.clear()
            return handler
        return register

    def handlers_for(self, name: str) -> Tuple[Handler, ...]:
        found = self._by_name.get(name)
        if found is None:
            found = tuple(handler for match, handler in self._entries
                          if (name in match if isinstance(match, set) else match(name)))
            self._by_name[name] = found
        return found

    def dispatch(self, call: ApiCall) -> Optional[Value]:
        """The value the first handler that answers gives; None when none does."""
        for handler in self.handlers_for(call.name):
            result = handler(call)
            if result is not None:
                return result
        return None
