"""Fix shapes that several rules share: a guarded device, a copy to the host,
a statement moved within its block, a keyword added to a call."""
from __future__ import annotations

from typing import Dict, List, Optional, Protocol, Tuple

import libcst as cst

from ..analysis.names import dotted_name, walk
from .builder import EditBuilder
from .file_view import FileView
from .model import Edit


class FixContext(FileView, Protocol):
    """The file a recipe edits, and the builder of its edits (the rules' `RuleContext`)."""

    @property
    def edits(self) -> EditBuilder: ...

#: Where a conditional expression needs no parentheses.
_BARE_CONTEXTS = (cst.Arg, cst.Assign, cst.AnnAssign, cst.Param, cst.Return, cst.Element, cst.DictElement)
ACCELERATOR = "accelerator"


def _accelerator_call(torch: str) -> str:
    return f"{torch}.accelerator.current_accelerator(check_available=True)"


def guarded_string(context: FixContext, literal: cst.SimpleString) -> Tuple[str, List[Edit]]:
    """`"cuda"` -> `"cuda" if torch.cuda.is_available() else "cpu"` (or the torch.accelerator
    spelling), parenthesised where the expression sits inside a larger one."""
    torch, import_edit = context.edits.spell("torch")
    device = literal.evaluated_value if isinstance(literal.evaluated_value, str) else ""
    if context.fallback_style == ACCELERATOR and ":" not in device:
        text = f"({_accelerator_call(torch)} or {torch}.device(\"cpu\")).type"
    else:
        text = f"{context.module.code_for_node(literal)} if {torch}.cuda.is_available() else \"cpu\""
        if not isinstance(context.edits.parent(literal), _BARE_CONTEXTS):
            text = f"({text})"
    return text, [import_edit] if import_edit else []


def guarded_device_call(context: FixContext, call: cst.Call) -> Optional[Tuple[str, List[Edit]]]:
    """`torch.device("cuda")` -> a torch.device with a CPU fallback."""
    if len(call.args) != 1 or call.args[0].keyword is not None or not isinstance(call.args[0].value, cst.SimpleString):
        return None
    literal = call.args[0].value
    torch, import_edit = context.edits.spell("torch")
    device = literal.evaluated_value if isinstance(literal.evaluated_value, str) else ""
    if context.fallback_style == ACCELERATOR and ":" not in device:
        text = f"{_accelerator_call(torch)} or {torch}.device(\"cpu\")"
        if not isinstance(context.edits.parent(call), _BARE_CONTEXTS):
            text = f"({text})"
    else:
        func = context.module.code_for_node(call.func)
        text = f"{func}({context.module.code_for_node(literal)} if {torch}.cuda.is_available() else \"cpu\")"
    return text, [import_edit] if import_edit else []


def guarded_cuda_method(context: FixContext, call: cst.Call) -> Optional[Tuple[str, List[Edit]]]:
    """`x.cuda()` -> `x.to(<guarded device>)`: replaces the `.cuda()` part only."""
    if call.args or not isinstance(call.func, cst.Attribute):
        return None
    torch, import_edit = context.edits.spell("torch")
    if context.fallback_style == ACCELERATOR:
        device = f"{_accelerator_call(torch)} or \"cpu\""
    else:
        device = f"\"cuda\" if {torch}.cuda.is_available() else \"cpu\""
    return f"to({device})", [import_edit] if import_edit else []


def is_primary(node: cst.CSTNode) -> bool:
    """An expression `.attr` can follow without parentheses."""
    return isinstance(node, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) or bool(getattr(node, "lpar", ()))


def to_host(context: FixContext, expression: cst.BaseExpression) -> List[Edit]:
    """Edits making `expression` a host tensor without autograd history: `t` -> `t.detach().cpu()`."""
    text = context.module.code_for_node(expression)
    suffix = ".cpu()" if text.rstrip().endswith(".detach()") else ".detach().cpu()"
    if is_primary(expression):
        return [context.edits.insert_after(expression, suffix)]
    return [context.edits.replace(expression, f"({text}){suffix}")]


def move_to(context: FixContext, expression: cst.BaseExpression, device: str) -> List[Edit]:
    """`x` -> `x.to(device)`, parenthesised when needed."""
    if is_primary(expression):
        return [context.edits.insert_after(expression, f".to({device})")]
    return [context.edits.replace(expression, f"({context.module.code_for_node(expression)}).to({device})")]


def rebind_before(context: FixContext, statement: cst.SimpleStatementLine, name: str,
                  device: str) -> Optional[Edit]:
    """`y = y.to(device)` on its own line before `statement`, so that every later use sees the
    moved tensor; None when the line cannot go there (a name not bound yet, an odd indentation)."""
    first = statement.body[0]
    if not context.edits.name_bound_before(name, first, local=True):
        return None
    root = device.split(".")[0]
    if root.isidentifier() and not context.edits.name_bound_before(root, first):
        return None
    indent = context.edits.indentation(statement)
    if indent is None:
        return None
    return context.edits.insert_lines_before(statement, f"{indent}{name} = {name}.to({device}){context.edits.newline}")


def mutated_in_place(context: FixContext, at: cst.CSTNode, name: str) -> bool:
    """Does the function around `at` (or the module) change `name` in place from `at` on, or in a
    loop around `at` (whose next turn comes after it): `name.sub_(...)`, `name += ...`, `name[i] = ...`?
    A moved copy bound to the name would take those changes instead of the tensor they were meant for
    (an EMA's shadow weights). Changes made before the copy are kept by it."""
    path = context.edits.path(at)
    scope = next((a for a in reversed(path[:-1]) if isinstance(a, cst.FunctionDef)), None) or context.edits.module
    loop = next((a for a in reversed(path[:-1]) if isinstance(a, (cst.For, cst.While))), None)
    lines = context.edits.in_place_changes(scope, lambda node: _in_place_lines(context, node)).get(name, ())
    start = context.range_of(at).start.line
    span = context.range_of(loop) if loop is not None else None
    return any(line >= start or (span is not None and span.start.line <= line <= span.end.line) for line in lines)


def _in_place_lines(context: FixContext, scope: cst.CSTNode) -> Dict[str, List[int]]:
    """Name -> the lines of `scope` that change it in place."""
    found: Dict[str, List[int]] = {}
    for node in walk(scope):
        name = _changed_in_place(node)
        if name is not None:
            found.setdefault(name, []).append(context.range_of(node).start.line)
    return found


def _changed_in_place(node: cst.CSTNode) -> Optional[str]:
    """The name a node changes in place (`x.sub_(...)`, `x += ...`, `x[i] = ...`), if any."""
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and isinstance(node.func.value, cst.Name):
        method = node.func.attr.value
        return node.func.value.value if method.endswith("_") and not method.startswith("_") else None
    if isinstance(node, cst.AugAssign) and isinstance(node.target, cst.Name):
        return node.target.value
    if isinstance(node, cst.AssignTarget) and isinstance(node.target, cst.Subscript) \
            and isinstance(node.target.value, cst.Name):
        return node.target.value.value
    return None


def has_keyword(call: cst.Call, keyword: str) -> bool:
    return any(arg.keyword is not None and arg.keyword.value == keyword for arg in call.args)


def takes_keyword(call: cst.Call, keyword: str) -> bool:
    """A keyword can be added: not there already, and no `**kwargs` that might hold it."""
    return not has_keyword(call, keyword) and not any(arg.star == "**" for arg in call.args)


def move_statement(context: FixContext, statement: cst.SimpleStatementLine,
                   anchor: cst.SimpleStatementLine, before: bool) -> List[Edit]:
    """Cut `statement`'s lines and put them before (or after) `anchor`, in the same block."""
    text = context.edits.lines_of(statement)
    put = context.edits.insert_lines_before(anchor, text) if before else context.edits.insert_lines_after(anchor, text)
    return [context.edits.remove_lines(statement), put]


def block_position(context: FixContext, statement: cst.SimpleStatementLine) -> Optional[int]:
    parent = context.edits.parent(statement)
    body = getattr(parent, "body", None)
    if not isinstance(body, (tuple, list)):
        return None
    for index, item in enumerate(body):
        if item is statement:
            return index
    return None


def lone_move_of(statement: Optional[cst.SimpleStatementLine], name: str) -> bool:
    """The statement does nothing but move `name`: `name.to(d)`, `name = name.cuda()`."""
    if statement is None:
        return False
    small = statement.body[0]
    if isinstance(small, cst.Expr):
        call = small.value
    elif isinstance(small, cst.Assign) and len(small.targets) == 1 and dotted_name(small.targets[0].target) == name:
        call = small.value
    else:
        return False
    return (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)
            and dotted_name(call.func.value) == name and call.func.attr.value in ("to", "cuda"))


def names_read(node: cst.CSTNode) -> List[str]:
    """The plain names an expression or statement reads (the roots of attribute chains too)."""
    found: List[str] = []

    class _Names(cst.CSTVisitor):
        def visit_Name(self, name: cst.Name) -> None:
            found.append(name.value)

        def visit_Attribute(self, attribute: cst.Attribute) -> bool:
            attribute.value.visit(self)
            return False

        def visit_Arg(self, arg: cst.Arg) -> bool:
            arg.value.visit(self)
            return False

        def visit_AssignTarget(self, target: cst.AssignTarget) -> bool:
            return False

    node.visit(_Names())
    return found


def reorder_move(context: FixContext, move: cst.CSTNode, anchor: cst.CSTNode,
                 before: bool) -> Optional[Tuple[List[Edit], bool]]:
    """Put the statement that moves a module (`model.to(device)`) before or after the statement
    holding `anchor`, when both sit in the same block; also says whether they were adjacent."""
    move_statement_line = context.edits.statement(move)
    anchor_statement = context.edits.statement(anchor)
    if (move_statement_line is None or anchor_statement is None or not isinstance(move, cst.Call)
            or not isinstance(move.func, cst.Attribute)
            or not context.edits.same_block(move_statement_line, anchor_statement)):
        return None
    receiver = dotted_name(move.func.value)
    if receiver is None or not lone_move_of(move_statement_line, receiver):
        return None
    moved_at, anchor_at = block_position(context, move_statement_line), block_position(context, anchor_statement)
    if moved_at is None or anchor_at is None or (anchor_at < moved_at) != before:
        return None
    if before and not all(context.edits.name_bound_before(name, anchor_statement.body[0])
                          for name in names_read(move_statement_line)):
        return None  # the move needs something defined after its new place
    edits = move_statement(context, move_statement_line, anchor_statement, before)
    return edits, abs(moved_at - anchor_at) == 1
