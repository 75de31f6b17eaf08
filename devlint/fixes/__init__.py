"""Fixes: edits a rule proposes, and applying them to files without losing a byte."""
from __future__ import annotations

from .model import SAFE, UNSAFE, Edit, Fix

__all__ = ["SAFE", "UNSAFE", "Edit", "Fix"]
