"""`--output-format json`: a list of diagnostics exactly as DESIGN §4 fixes it."""
from __future__ import annotations

import json
from typing import Sequence

from ..diagnostics import Diagnostic


def format_json(diagnostics: Sequence[Diagnostic]) -> str:
    return json.dumps([d.to_json() for d in diagnostics], indent=2, ensure_ascii=False) + "\n"
