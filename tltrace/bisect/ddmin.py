"""Delta debugging (Zeller's ddmin), pure: the smallest subset of `items` for which `test` holds.

`test(subset)` is True when the subset still shows what is sought (here: flipping those
pass configs turns the outcome). ddmin cuts the set into n parts, keeps a part or a
complement that still shows it, and doubles n when none does; the answer is 1-minimal:
leaving out any one item loses it. Results are cached by subset, so no subset is tested
twice. No I/O: the caller's `test` runs the steps.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")


def ddmin(items: Sequence[T], test: Callable[[tuple[T, ...]], bool]) -> tuple[T, ...]:
    """Return a 1-minimal subset of `items` (in their order) for which `test` holds; `test(items)` must hold."""
    seen: dict[tuple[T, ...], bool] = {}

    def holds(s: tuple[T, ...]) -> bool:
        if s not in seen:
            seen[s] = test(s)
        return seen[s]

    c = tuple(items)
    n = 2
    while len(c) >= 2:
        n = min(n, len(c))
        cuts = [round(i * len(c) / n) for i in range(n + 1)]
        parts = [c[cuts[i] : cuts[i + 1]] for i in range(n)]
        for part in parts:
            if holds(part):
                c, n = part, 2
                break
        else:
            for part in parts if n > 2 else ():
                rest = tuple(x for x in c if x not in part)
                if holds(rest):
                    c, n = rest, max(n - 1, 2)
                    break
            else:
                if n >= len(c):
                    break
                n = min(len(c), 2 * n)
    return c
