"""The one walk that says what each function contains: its body's calls, and whether it offers a CPU path."""
from __future__ import annotations

import textwrap

import libcst as cst

from devlint.analysis.function_syntax import index_functions
from devlint.analysis.names import walk


def _index(source: str, with_cpu_test: bool = True):
    module = cst.parse_module(textwrap.dedent(source))
    functions = {node.name.value: node for node in walk(module) if isinstance(node, cst.FunctionDef)}
    cpu = (lambda node: isinstance(node, cst.SimpleString) and node.value == '"cpu"') if with_cpu_test else None
    index = index_functions(module, cpu)
    return {name: index[id(node)] for name, node in functions.items()}


def _callees(syntax):
    return sorted(cst.Module([]).code_for_node(call.func) for call in syntax.calls)


def test_a_nested_functions_calls_are_its_own_and_its_outer_functions():
    found = _index("""
        def outer():
            prepare()
            def inner():
                step()
            return inner
    """)
    assert _callees(found["outer"]) == ["prepare", "step"]
    assert _callees(found["inner"]) == ["step"]


def test_calls_in_a_header_belong_to_the_function_around_it_not_to_the_function():
    found = _index("""
        def outer():
            @decorate()
            def inner(size=default_size()):
                pass
    """)
    assert _callees(found["inner"]) == []
    assert _callees(found["outer"]) == ["decorate", "default_size"]


def test_a_cpu_default_in_the_header_offers_a_cpu_path_and_so_does_a_nested_body():
    found = _index("""
        def load(path, device="cpu"):
            pass

        def build():
            def fallback():
                return "cpu"
            return fallback

        def train():
            pass
    """)
    assert found["load"].offers_cpu_path and found["build"].offers_cpu_path and found["fallback"].offers_cpu_path
    assert not found["train"].offers_cpu_path


def test_without_a_node_test_nothing_offers_a_cpu_path():
    found = _index("""
        def load(device="cpu"):
            pass
    """, with_cpu_test=False)
    assert not found["load"].offers_cpu_path


def test_methods_and_functions_under_statements_are_indexed():
    found = _index("""
        class Trainer:
            def fit(self):
                self.step()
        if True:
            def main():
                Trainer().fit()
    """)
    assert _callees(found["fit"]) == ["self.step"]
    assert _callees(found["main"]) == ["Trainer", "Trainer().fit"]


def test_a_class_offers_a_cpu_path_through_any_of_its_methods_and_has_no_calls_of_its_own():
    module = cst.parse_module(textwrap.dedent("""
        class Trainer:
            def pick(self):
                return "cpu"
            def fit(self):
                self.step()
    """))
    cls = module.body[0]
    index = index_functions(module, lambda node: isinstance(node, cst.SimpleString) and node.value == '"cpu"')
    assert index[id(cls)].offers_cpu_path and index[id(cls)].calls == []
