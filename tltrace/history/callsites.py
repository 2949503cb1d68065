"""Compiles grouped by call site: the stack trie of their manifests' `stack` (tlparse's view).

Every compile's stack (callsites/stack.py) is a path from the script's outermost frame to
the call that compiled; compiles that share a prefix share a branch. A branch with one
child and no compile of its own is folded into that child, so a tree of two call sites
under one helper reads as three lines. Pure: data in, a tree out.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

Frame = tuple[str, int, str]  # file, line, func


def frames_of(stack: Any) -> tuple[Frame, ...]:
    """Return a manifest's `stack` as (file, line, func) tuples; () when it is missing or malformed."""
    if not isinstance(stack, list):
        return ()
    out = []
    for f in stack:
        if not isinstance(f, dict):
            return ()
        line = f.get("line")
        out.append(
            (
                str(f.get("file", "?")),
                line if isinstance(line, int) and not isinstance(line, bool) else 0,
                str(f.get("func", "?")),
            )
        )
    return tuple(out)


def label(frame: Frame) -> str:
    """Return `file.py:12 func` (a worker-thread hop: `(worker thread) NAME`)."""
    file, line, func = frame
    if file.startswith("("):
        return f"{file} {func}"
    return f"{os.path.basename(file)}:{line} {func}"


def call_site(stack: Any) -> str | None:
    """Return the innermost frame's label (the line that compiled), or None without a stack."""
    frames = frames_of(stack)
    return label(frames[-1]) if frames else None


@dataclass
class Node:
    """A branch of the trie: the frames it adds to its parent's path, its compiles, its branches."""

    frames: list[Frame] = field(default_factory=list)
    items: list[int] = field(default_factory=list)  # positions in the list given to `build`
    children: dict[Frame, Node] = field(default_factory=dict)

    def label(self) -> str:
        return " \u203a ".join(label(f) for f in self.frames)


def build(stacks: Sequence[Any]) -> Node:
    """Return the folded trie of `stacks` (manifest `stack` values); compiles without one sit at the root."""
    root = Node()
    for pos, stack in enumerate(stacks):
        node = root
        for frame in frames_of(stack):
            node = node.children.setdefault(frame, Node([frame]))
        node.items.append(pos)
    _fold(root)
    return root


def _fold(node: Node) -> None:
    for child in node.children.values():
        _fold(child)
        while len(child.children) == 1 and not child.items:
            (only,) = child.children.values()
            child.frames.extend(only.frames)
            child.items, child.children = only.items, only.children
    # the root keeps its own frames empty


def walk(root: Node) -> Iterator[tuple[int, Node]]:
    """Yield (depth, node) in order, the root's children at depth 0 (the root itself is not yielded)."""
    stack = [(0, c) for c in reversed(list(root.children.values()))]
    while stack:
        depth, node = stack.pop()
        yield depth, node
        stack.extend((depth + 1, c) for c in reversed(list(node.children.values())))


def sites(stacks: Sequence[Any]) -> int:
    """Return how many distinct call sites (innermost frames with their paths) the stacks have."""
    return len({frames_of(s) for s in stacks if frames_of(s)})
