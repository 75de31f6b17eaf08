"""The arguments of a call as the interpreter evaluated them."""
from __future__ import annotations

from typing import NamedTuple, Optional

import libcst as cst

from .lattice import Value


class Arg(NamedTuple):
    node: cst.Arg
    value: Value

    @property
    def keyword(self) -> Optional[str]:
        return self.node.keyword.value if self.node.keyword is not None else None


def caller_arg(value: Value) -> Arg:
    """An argument the analysis passes itself (the index of `dataset[i]`)."""
    return Arg(cst.Arg(cst.Name("index")), value)
