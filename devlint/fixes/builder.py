"""Edits from nodes: what a rule uses to describe its fix.

The builder answers the few structural questions a fix needs (the statement
around a node, the function it is in, whether a name is bound there) by
walking the tree near that node (`tree.py`), and only when a fix is built.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import libcst as cst
from libcst.metadata import CodeRange

from . import imports, tree
from .apply import line_starts, lines, to_offset
from .file_view import FileView
from .model import Edit

Statement = cst.SimpleStatementLine


class UnreliablePosition(Exception):
    """libcst's position for a node does not cover the node's text: no fix is offered."""


class EditBuilder:
    def __init__(self, context: FileView, fallback_style: str = "is_available") -> None:
        self.context = context
        self.module = context.module
        self.newline = context.module.default_newline
        self.fallback_style = fallback_style
        self._paths: Dict[cst.CSTNode, List[cst.CSTNode]] = {}
        self._text: Optional[str] = None
        self._line_starts: Optional[List[int]] = None
        self._main_guards: Optional[List[Optional[CodeRange]]] = None
        #: per scope (function or module), the names changed in place there and the lines they are
        #: changed on (see `recipes.mutated_in_place`), found once per scope
        self._in_place: Dict[int, Dict[str, List[int]]] = {}

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = self.context.text
            self._line_starts = line_starts(self._text)
        return self._text

    def _checked(self, node: cst.CSTNode) -> CodeRange:
        """The node's range, after making sure it covers the node's own text: a fix must never
        edit characters other than those it means to (libcst counts a form feed differently)."""
        where = self.context.range_of(node)
        text = self.text
        start = to_offset(self._line_starts, text, where.start.line, where.start.column)
        end = to_offset(self._line_starts, text, where.end.line, where.end.column)
        if start is None or end is None:
            raise UnreliablePosition(f"{type(node).__name__} at {where.start.line}:{where.start.column}")
        # Whitespace aside: libcst renders a nested node without its block's indentation.
        covered, expected = _squash(text[start:end]), _squash(self.module.code_for_node(node))
        if covered != expected if isinstance(node, cst.BaseExpression) else covered not in expected:
            raise UnreliablePosition(f"{type(node).__name__} at {where.start.line}:{where.start.column}")
        return where

    # --- edits ------------------------------------------------------------------

    def replace(self, node: cst.CSTNode, content: str) -> Edit:
        where = self._checked(node)
        return Edit(where.start.line, where.start.column, where.end.line, where.end.column, content)

    def replace_span(self, first: cst.CSTNode, last: cst.CSTNode, content: str) -> Edit:
        """Replace from the start of `first` to the end of `last`."""
        start, end = self._checked(first).start, self._checked(last).end
        return Edit(start.line, start.column, end.line, end.column, content)

    def remove_tail(self, inner: cst.CSTNode, outer: cst.CSTNode) -> Edit:
        """Remove what `outer` has after `inner` (`.to(device)` of `torch.zeros(3).to(device)`)."""
        start, end = self._checked(inner).end, self._checked(outer).end
        return Edit(start.line, start.column, end.line, end.column, "")

    def insert_before(self, node: cst.CSTNode, content: str) -> Edit:
        start = self._checked(node).start
        return Edit(start.line, start.column, start.line, start.column, content)

    def insert_after(self, node: cst.CSTNode, content: str) -> Edit:
        end = self._checked(node).end
        return Edit(end.line, end.column, end.line, end.column, content)

    def add_keyword(self, call: cst.Call, keyword: str, value: str) -> Edit:
        """`f(a)` -> `f(a, keyword=value)`; `f()` -> `f(keyword=value)`; a call with one argument
        per line and a trailing comma gets a line of its own."""
        if call.args:
            last = call.args[-1]
            comma = last.comma
            if isinstance(comma, cst.Comma) and isinstance(comma.whitespace_after, cst.ParenthesizedWhitespace):
                indent = self._indentation_at(self._checked(last).start)
                if indent is not None:
                    return self.insert_after(comma, f"{self.newline}{indent}{keyword}={value},")
            return self.insert_after(last.value, f", {keyword}={value}")
        end = self.context.range_of(call).end  # just past `)`
        return Edit(end.line, end.column - 1, end.line, end.column - 1, f"{keyword}={value}")

    def remove_lines(self, statement: Statement) -> Edit:
        where = self._checked(statement)
        return Edit(where.start.line, 0, where.end.line + 1, 0, "")

    def lines_of(self, statement: Statement) -> str:
        """The full source lines of a statement, ending with a newline."""
        where = self._checked(statement)
        text = "".join(lines(self.text)[where.start.line - 1: where.end.line])
        return text if text.endswith(("\n", "\r")) else text + self.newline

    def indentation(self, statement: Statement) -> Optional[str]:
        """The whitespace before the statement on its line; None if anything else is there."""
        return self._indentation_at(self._checked(statement).start)

    def _indentation_at(self, position) -> Optional[str]:
        offset = self._line_starts[position.line - 1]
        prefix = self.text[offset: offset + position.column]
        return prefix if not prefix.strip() else None

    def insert_lines_before(self, statement: Statement, text: str) -> Edit:
        start = self._checked(statement).start
        return Edit(start.line, 0, start.line, 0, text)

    def insert_lines_after(self, statement: Statement, text: str) -> Edit:
        end = self._checked(statement).end
        return Edit(end.line + 1, 0, end.line + 1, 0, text)

    # --- imports ------------------------------------------------------------------

    def spell(self, qualified: str) -> Tuple[str, Optional[Edit]]:
        """How to write `torch`/`torch.nn` here, and the `import torch` edit when the file lacks it."""
        spelled, missing = imports.spell(self.module, qualified)
        if not missing:
            return spelled, None
        index, at_end = imports.import_position(self.module)
        line = f"import torch{self.newline}"
        if at_end:
            end = self.context.range_of(self.module.body[-1]).end if self.module.body else None
            target = end.line + 1 if end is not None else 1
            if not self.module.code.endswith(("\n", "\r")) and self.module.body:
                return spelled, Edit(end.line, end.column, end.line, end.column, self.newline + "import torch")
            return spelled, Edit(target, 0, target, 0, line)
        start = self.context.range_of(self.module.body[index]).start
        if not imports.is_import(self.module.body[index]):
            line += self.newline  # an import block ends with a blank line
        return spelled, Edit(start.line, 0, start.line, 0, line)

    # --- structure ---------------------------------------------------------------

    def _range_or_none(self, node: cst.CSTNode) -> Optional[CodeRange]:
        try:
            return self.context.range_of(node)
        except KeyError:
            return None

    def path(self, node: cst.CSTNode) -> List[cst.CSTNode]:
        """The nodes from the module down to `node` (empty when it is not in the module)."""
        if node not in self._paths:
            self._paths[node] = tree.path_to(self.module, node, self._range_or_none) or []
        return self._paths[node]

    def parent(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        path = self.path(node)
        return path[-2] if len(path) >= 2 else None

    def statement(self, node: cst.CSTNode) -> Optional[Statement]:
        """The simple statement line that holds `node`, when it holds nothing else."""
        for ancestor in reversed(self.path(node)):
            if isinstance(ancestor, cst.SimpleStatementLine):
                return ancestor if len(ancestor.body) == 1 else None
            if isinstance(ancestor, cst.BaseCompoundStatement):
                return None
        return None

    def in_place_changes(self, scope: cst.CSTNode, finder) -> Dict[str, List[int]]:
        """`finder(scope)` (name -> lines), computed once per scope."""
        found = self._in_place.get(id(scope))
        if found is None:
            found = self._in_place[id(scope)] = finder(scope)
        return found

    def function(self, node: cst.CSTNode) -> Optional[cst.FunctionDef]:
        return next((a for a in reversed(self.path(node)[:-1]) if isinstance(a, cst.FunctionDef)), None)

    def same_block(self, first: Statement, second: Statement) -> bool:
        return self.parent(first) is self.parent(second) and self.parent(first) is not None

    def name_bound_before(self, name: str, at: cst.CSTNode, local: bool = False) -> bool:
        """`name` is a variable that exists where `at` runs: bound earlier in the same
        function (or a parameter), or, unless `local`, bound in an enclosing scope. (Assigning
        a name that only an enclosing scope binds would make it local to the whole function.)"""
        path = self.path(at)
        if not path:
            return False
        innermost = next((n for n in reversed(path[:-1]) if isinstance(n, tree.NEW_SCOPES)), None)
        if innermost is not None and not isinstance(innermost, cst.FunctionDef):
            return False  # a class body, lambda or comprehension: not worth the subtleties
        # Class bodies are not visible from their methods: only functions and the module count.
        scopes = [self.module] + [n for n in path[:-1] if isinstance(n, cst.FunctionDef)]
        start = self.context.range_of(at).start
        here = tree.binding_positions(name, scopes[-1], self._range_or_none)
        if here:
            return any(_before(where.start, start) for where in here)
        if local:
            return False
        for outer in scopes[:-1]:
            positions = tree.binding_positions(name, outer, self._range_or_none)
            if outer is self.module and len(scopes) > 1:
                # a global bound only under `if __name__ == "__main__":` exists when the file runs as
                # a script, not when a function of it is imported
                positions = [where for where in positions if not self._in_main_guard(where.start)]
            if positions:
                return True
        return False

    def _in_main_guard(self, position) -> bool:
        if self._main_guards is None:
            self._main_guards = [self._range_or_none(statement) for statement in self.module.body
                                 if isinstance(statement, cst.If) and _is_main_test(statement.test)]
        return any(span is not None and not _before(position, span.start) and _before(position, span.end)
                   for span in self._main_guards)


def _is_main_test(test: cst.BaseExpression) -> bool:
    """`__name__ == "__main__"` (either way round)."""
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    sides = {test.left, test.comparisons[0].comparator}
    names = {side.value for side in sides if isinstance(side, cst.Name)}
    strings = {side.evaluated_value for side in sides if isinstance(side, cst.SimpleString)}
    return names == {"__name__"} and strings == {"__main__"}


def _squash(text: str) -> str:
    return "".join(text.split())


def _before(first, second) -> bool:
    return (first.line, first.column) < (second.line, second.column)
