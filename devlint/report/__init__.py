"""Output formats. Each takes the sorted diagnostics and returns text to print."""
from __future__ import annotations

from .json_format import format_json
from .text import format_fix_hint, format_fixed, format_statistics, format_summary, format_text

FORMATS = ("text", "json")

__all__ = ["FORMATS", "format_fix_hint", "format_fixed", "format_json", "format_statistics", "format_summary", "format_text"]
