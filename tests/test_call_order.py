"""The generic-run order of a file's functions: callers before callees, source order otherwise."""
from __future__ import annotations

import textwrap

import libcst as cst

from devlint.analysis.call_order import MAX_SAME_NAME, callers_first, calls_by_function


def _parsed(source: str):
    module = cst.parse_module(textwrap.dedent(source))
    return [node for node in module.body if isinstance(node, cst.FunctionDef)], calls_by_function(module)


def _by_name(call: cst.Call):
    return (call.func.value,) if isinstance(call.func, cst.Name) else ()


def _order(source: str):
    functions, calls = _parsed(source)
    return [f.name.value for f in callers_first(functions, lambda f: f, _by_name, calls)]


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
