"""What fixes need to know about the file they edit, as an interface.

The rules' `RuleContext` provides it; fixes depend on this, not on the rules."""
from __future__ import annotations

from typing import Protocol

import libcst as cst
from libcst.metadata import CodeRange


class FileView(Protocol):
    module: cst.Module
    #: the source as read (libcst's rendering may differ: fixes check their positions against this)
    text: str
    #: how a device fallback is spelled (`is_available` or `accelerator`)
    fallback_style: str

    def range_of(self, node: cst.CSTNode) -> CodeRange: ...
