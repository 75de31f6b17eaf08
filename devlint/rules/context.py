"""What a rule may ask about the file: lines and text of nodes, in words.

Positions are resolved lazily, on the first question, so a file that
reports nothing never pays for libcst's position metadata.
"""
from __future__ import annotations

from typing import Dict, Optional

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from ..analysis.facts import Operand
from ..fixes.builder import EditBuilder
from ..analysis.lattice import (
    SOURCE_CREATED, SOURCE_FACTORY, SOURCE_STEP, SOURCE_LOAD, SOURCE_LOADER, SOURCE_TOKENIZER, STEP_SAMPLE, Value,
)

_SOURCE_WORDS = {
    SOURCE_LOADER: "DataLoader batch, line {}",
    SOURCE_TOKENIZER: "tokenizer output, line {}",
    SOURCE_LOAD: "torch.load, line {}",
    SOURCE_FACTORY: "created on line {}",
    SOURCE_CREATED: "created on line {}",
    SOURCE_STEP: "created on line {}",
}
_MAX_TEXT = 40


class RuleContext:
    def __init__(self, module: cst.Module, fallback_style: str = "is_available", text: Optional[str] = None) -> None:
        self.module = module
        #: The source as read. libcst's own rendering can differ (it drops form feeds), and
        #: fixes edit the source, so they check their positions against this.
        self.text = text if text is not None else module.code
        self.fallback_style = fallback_style
        self._positions: Optional[Dict[cst.CSTNode, CodeRange]] = None
        self._edits: Optional[EditBuilder] = None

    @property
    def edits(self) -> EditBuilder:
        """Builds the edits of a fix (created on first use)."""
        if self._edits is None:
            self._edits = EditBuilder(self, self.fallback_style)
        return self._edits

    def range_of(self, node: cst.CSTNode) -> CodeRange:
        if self._positions is None:
            wrapper = MetadataWrapper(self.module, unsafe_skip_copy=True)
            self._positions = wrapper.resolve(PositionProvider)
        return self._positions[node]

    def line_of(self, node: cst.CSTNode) -> int:
        return self.range_of(node).start.line

    def text_of(self, node: cst.CSTNode) -> str:
        text = " ".join(self.module.code_for_node(node).split())
        return text if len(text) <= _MAX_TEXT else text[: _MAX_TEXT - 3] + "..."

    def origin_words(self, value: Value) -> str:
        """`DataLoader batch, line 12`: where a value came from, without its device."""
        if value.origin is None:
            return "made here"
        if value.source == SOURCE_LOADER and value.cls == STEP_SAMPLE:
            return f"yielded by the loop on line {self.line_of(value.origin)}"
        return _SOURCE_WORDS.get(value.source, "since line {}").format(self.line_of(value.origin))

    def where(self, value: Value) -> str:
        """`cpu (a DataLoader batch, line 12)`: a device and where it came from."""
        device = value.device.describe()
        if value.origin is None:
            return device
        words = self.origin_words(value)
        words += self.via_words(value.via, value.origin)
        if value.stored is not None and self.line_of(value.stored) != self.line_of(value.origin):
            words += f", stored on line {self.line_of(value.stored)}"
        return f"{device} ({words})"

    def via_words(self, via: Optional[cst.CSTNode], here: cst.CSTNode) -> str:
        """` in `f`, called on line 43`: the call a value came back through, when not on `here`'s line."""
        if isinstance(via, cst.Call) and self.line_of(via) != self.line_of(here):
            return f" in `{self.text_of(via.func)}`, called on line {self.line_of(via)}"
        return ""

    def call_chain(self, chain) -> str:
        """` (when `generate` is called from line 56)`: the calls a finding depends on, innermost first."""
        if not chain:
            return ""
        callee, call = chain[0]
        text = f" (when `{callee}` is called from line {self.line_of(call)}"
        if len(chain) > 1:
            text += ", via line " + ", ".join(str(self.line_of(outer)) for _, outer in chain[1:3])
        return text + ")"

    def operand(self, operand: Operand) -> str:
        return f"`{self.text_of(operand.node)}`"
