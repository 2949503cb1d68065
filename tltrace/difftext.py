"""Line diffs of IR texts: +/- counts and unified diff lines. Pure functions, no I/O."""

from __future__ import annotations

import difflib


def split_lines(text: str) -> list[str]:
    return text.splitlines()


def count_changes(before: str, after: str) -> tuple[int, int]:
    """Return (added, removed) line counts of the diff from `before` to `after`."""
    if before == after:
        return 0, 0
    a, b = before.splitlines(), after.splitlines()
    added = removed = 0
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        removed += i2 - i1
        added += j2 - j1
    return added, removed


def unified(before: str, after: str, *, context: int = 3, a: str = "before", b: str = "after") -> list[str]:
    """Return the unified diff lines (no trailing newlines) from `before` to `after`."""
    return list(
        difflib.unified_diff(before.splitlines(), after.splitlines(), a, b, n=max(0, context), lineterm="")
    )
