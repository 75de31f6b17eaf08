"""Output formats. Each takes the sorted diagnostics and returns text to print."""
from __future__ import annotations

from .json_format import format_json
from .text import format_statistics, format_summary, format_text

FORMATS = ("text", "json")

__all__ = ["FORMATS", "format_json", "format_statistics", "format_summary", "format_text"]
