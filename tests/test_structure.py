"""The shape of the code that others build on: no import cycles, API knowledge in registries."""
from __future__ import annotations

import ast
from pathlib import Path

import libcst as cst
import pytest

from devlint.analysis.call_args import Arg
from devlint.analysis.env import Env
from devlint.analysis.handlers.builtins import BUILTINS
from devlint.analysis.handlers.registry import ApiCall, Registry
from devlint.analysis.handlers.tensor_methods import TENSOR_METHODS
from devlint.analysis.handlers.torch_functions import FUNCTIONS
from devlint.analysis.lattice import HOST, Kind, Source, Value

PACKAGE = Path(__file__).resolve().parent.parent / "devlint"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_graph():
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        deps = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                for alias in node.names:
                    submodule = f"{target}.{alias.name}"
                    deps.add(submodule if submodule in modules else target)
            elif isinstance(node, ast.Import):
                deps.update(alias.name for alias in node.names)
        graph[name] = {d for d in deps if d in modules and d != name}
    return graph


def _cycle_from(graph, start):
    """A path of imports from `start` back to itself, if there is one (type-only imports included)."""
    stack, seen = [(start, [start])], set()
    while stack:
        node, path = stack.pop()
        for dep in graph[node]:
            if dep == start:
                return path + [start]
            if dep not in seen:
                seen.add(dep)
                stack.append((dep, path + [dep]))
    return None


def test_no_module_imports_itself_through_others():
    graph = _import_graph()
    cycles = [c for c in (_cycle_from(graph, name) for name in sorted(graph)) if c]
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles[:5])


def test_cycle_finder_sees_a_cycle():
    # the check above must be able to fail: a graph with a cycle gives that cycle
    assert _cycle_from({"a": {"b"}, "b": {"c"}, "c": {"a"}}, "a") == ["a", "b", "c", "a"]


class _Quiet:
    """An evaluator for handlers that only read the call: nothing is recorded."""

    recording = False


def _call(name: str, source: str = "f()", **changes) -> ApiCall:
    node = cst.parse_expression(source)
    return ApiCall(name, node, [Arg(a, Value(kind=HOST)) for a in node.args], Env(), _Quiet(), **changes)


def test_handlers_for_a_name_run_in_registration_order_until_one_answers():
    registry = Registry("test")
    seen = []

    @registry.on("f")
    def first(call):
        seen.append("first")

    @registry.when(lambda name: name.startswith("f"))
    def second(call):
        seen.append("second")
        return Value(kind=HOST)

    @registry.on("f")
    def third(call):
        seen.append("third")
        return Value(kind=Kind.TENSOR)

    assert registry.dispatch(_call("f")).kind == HOST
    assert seen == ["first", "second"]
    assert registry.dispatch(_call("g")) is None


def test_a_handler_registered_for_no_name_is_refused():
    with pytest.raises(ValueError):
        Registry("test").on(())


@pytest.mark.parametrize("registry, name", [
    (FUNCTIONS, "torch.zeros"), (FUNCTIONS, "torch.load"), (FUNCTIONS, "torch.nn.DataParallel"),
    (FUNCTIONS, "torch.cuda.is_available"), (FUNCTIONS, "torch.optim.Adam"), (FUNCTIONS, "numpy.stack"),
    (TENSOR_METHODS, "to"), (TENSOR_METHODS, "item"), (TENSOR_METHODS, "numpy"), (TENSOR_METHODS, "zero_"),
    (BUILTINS, "zip"), (BUILTINS, "print"),
])
def test_the_torch_facts_are_registered(registry, name):
    assert registry.handlers_for(name), f"{registry.what} has no handler for {name}"


def test_names_nobody_knows_get_no_handler():
    assert not FUNCTIONS.handlers_for("mylib.make_thing")
    assert not TENSOR_METHODS.handlers_for("frobnicate")
    assert not BUILTINS.handlers_for("sum_of_squares")


def test_builtins_answer_from_the_call_alone():
    assert BUILTINS.dispatch(_call("len", "len(x)")).kind == HOST
    assert BUILTINS.dispatch(_call("range", "range(3)")).kind == Kind.LIST


def test_value_kinds_and_sources_are_enumerations_that_read_as_their_names():
    assert isinstance(Value().kind, Kind) and isinstance(Value().source, Source)
    assert f"{Kind.TENSOR}" == "tensor" and Source.LOAD == "torch.load"
