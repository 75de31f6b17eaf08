"""Output formats. Each takes the sorted diagnostics and returns text to print."""
from __future__ import annotations

from .github import format_github
from .json_format import format_json
from .sarif import format_sarif
from .text import format_fix_hint, format_fixed, format_statistics, format_summary, format_text

FORMATS = ("text", "json", "sarif", "github")
#: The formats that are a document of their own: no summary, statistics or hints around them.
MACHINE_FORMATS = {"json": format_json, "sarif": format_sarif, "github": format_github}

__all__ = ["FORMATS", "MACHINE_FORMATS", "format_fix_hint", "format_fixed", "format_github", "format_json",
           "format_sarif", "format_statistics", "format_summary", "format_text"]
