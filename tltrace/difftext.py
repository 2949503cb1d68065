"""Kept for imports from older code: the diff engine lives in tltrace.diff."""

from __future__ import annotations

from .diff import count_changes, unified

__all__ = ["count_changes", "unified"]
