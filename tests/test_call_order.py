"""The generic-run order of a file's functions: callers before callees, source order otherwise."""
from __future__ import annotations

import textwrap

import libcst as cst

from devlint.analysis.call_order import MAX_SAME_NAME, callers_first
from devlint.analysis.function_syntax import index_functions


def _parsed(source: str):
    module = cst.parse_module(textwrap.dedent(source))
    return [node for node in module.body if isinstance(node, cst.FunctionDef)], index_functions(module)


def _by_name(call: cst.Call):
    return (call.func.value,) if isinstance(call.func, cst.Name) else ()


def _order(source: str):
    functions, calls = _parsed(source)
    return [f.name.value for f in callers_first(functions, lambda f: f, _by_name, lambda f: calls[id(f)].calls)]


def test_a_helper_defined_above_its_caller_comes_after_it():
    assert _order("""
        def run(loader):
            pass
        def demo():
            run(1)
        def main():
            demo()
    """) == ["main", "demo", "run"]


def test_unrelated_functions_keep_source_order():
    assert _order("""
        def b():
            pass
        def a():
            pass
        def c():
            b()
    """) == ["a", "c", "b"]


def test_a_cycle_keeps_every_function_once():
    order = _order("""
        def ping(n):
            pong(n)
        def pong(n):
            ping(n)
        def main():
            ping(3)
    """)
    assert sorted(order) == ["main", "ping", "pong"] and order[0] == "main"


def test_a_name_shared_by_many_functions_orders_nothing():
    shared = "".join("def step():\n    pass\n" for _ in range(MAX_SAME_NAME + 1))
    order = _order(shared + "def first():\n    pass\ndef main():\n    step()\n")
    assert order[:MAX_SAME_NAME + 1] == ["step"] * (MAX_SAME_NAME + 1) and order[-2:] == ["first", "main"]


class _Everything(cst.CSTVisitor):
    """libcst's own walk, as the reference: every node it visits."""

    def __init__(self) -> None:
        self.nodes = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.nodes.append(node)
        return True


class _Calls(cst.CSTVisitor):
    def __init__(self) -> None:
        self.calls = []

    def visit_Call(self, node: cst.Call) -> None:
        self.calls.append(node)


def _reference_body_calls(function: cst.FunctionDef):
    visitor = _Calls()
    function.body.visit(visitor)
    return {id(call) for call in visitor.calls}


def test_the_field_walk_meets_every_node_but_layout_and_every_call():
    from fixture_support import fixture_files
    from devlint.analysis.names import walk

    layout = (cst.BaseParenthesizableWhitespace, cst.Comma, cst.Dot, cst.LeftParen, cst.RightParen, cst.Semicolon,
              cst.Colon, cst.AssignEqual, cst.EmptyLine, cst.TrailingWhitespace, cst.Newline, cst.LeftSquareBracket,
              cst.RightSquareBracket, cst.LeftCurlyBrace, cst.RightCurlyBrace, cst.BaseBinaryOp, cst.BaseBooleanOp,
              cst.BaseCompOp, cst.BaseUnaryOp, cst.BaseAugOp, cst.Comment, cst.ImportStar,
              cst.ParenthesizedWhitespace, cst.SimpleWhitespace)
    for path in fixture_files()[:80]:
        module = cst.parse_module(path.read_text(encoding="utf-8"))
        reference = _Everything()
        module.visit(reference)
        walked = {id(node) for node in walk(module)}
        missing = [type(node).__name__ for node in reference.nodes
                   if id(node) not in walked and not isinstance(node, layout)]
        assert not missing, f"{path.name}: the walk skips {sorted(set(missing))}"
        functions = [node for node in reference.nodes if isinstance(node, cst.FunctionDef)]
        index = index_functions(module)
        classes = [node for node in reference.nodes if isinstance(node, cst.ClassDef)]
        assert set(index) == {id(definition) for definition in functions + classes}, path.name
        for function in functions:
            assert {id(call) for call in index[id(function)].calls} == _reference_body_calls(function), \
                f"{path.name}: {function.name.value}"
