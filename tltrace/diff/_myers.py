"""Myers' O(ND) diff over integer sequences, written to match assets/diff.js step for step.

Both engines must choose the same edit script among equally short ones, so this is a
line-by-line port of the JavaScript (same loops, same tie-breaking); do not "improve" one
without the other: tests/test_diff_engine.py runs both over a corpus and compares.
"""

from __future__ import annotations

from collections.abc import Sequence

MAX_D = 1000  # edit distance past which a middle section is treated as replaced whole

# An op is (0, i, j) for "equal", (1, i, -1) for "a[i] removed", (2, -1, j) for "b[j] added".
EQ, DEL, ADD = 0, 1, 2
Op = tuple[int, int, int]


def myers(a: Sequence[int], b: Sequence[int]) -> list[Op]:
    """Return the edit script from `a` to `b`: ops in order, covering both sequences."""
    n, m = len(a), len(b)
    s = 0
    while s < n and s < m and a[s] == b[s]:
        s += 1
    ea, eb = n, m
    while ea > s and eb > s and a[ea - 1] == b[eb - 1]:
        ea -= 1
        eb -= 1
    ops: list[Op] = [(EQ, i, i) for i in range(s)]
    ops += _middle(a, s, ea, b, s, eb)
    ops += [(EQ, ea + i, eb + i) for i in range(n - ea)]
    return ops


def _replaced(a0: int, a1: int, b0: int, b1: int) -> list[Op]:
    return [(DEL, i, -1) for i in range(a0, a1)] + [(ADD, -1, j) for j in range(b0, b1)]


def _middle(a: Sequence[int], a0: int, a1: int, b: Sequence[int], b0: int, b1: int) -> list[Op]:
    N, M = a1 - a0, b1 - b0
    if N == 0 or M == 0:
        return _replaced(a0, a1, b0, b1)
    limit = min(N + M, MAX_D)
    off = limit + 1
    v = [0] * (2 * limit + 3)
    trace: list[list[int]] = []
    found = -1
    d = 0
    while d <= limit and found < 0:
        trace.append(v[off - d - 1 : off + d + 2])  # v before step d, for k in [-d-1, d+1]
        for k in range(-d, d + 1, 2):
            if k == -d or (k != d and v[off + k - 1] < v[off + k + 1]):
                x = v[off + k + 1]
            else:
                x = v[off + k - 1] + 1
            y = x - k
            while x < N and y < M and a[a0 + x] == b[b0 + y]:
                x += 1
                y += 1
            v[off + k] = x
            if x >= N and y >= M:
                found = d
                break
        d += 1
    if found < 0:
        return _replaced(a0, a1, b0, b1)
    rev: list[Op] = []
    x, y = N, M
    for d in range(found, -1, -1):
        t, base = trace[d], d + 1  # t[k + base] = v[k] before step d
        k = x - y
        pk = k + 1 if (k == -d or (k != d and t[k - 1 + base] < t[k + 1 + base])) else k - 1
        if d == 0:
            px = py = 0
        else:
            px = t[pk + base]
            py = px - pk
        while x > px and y > py:
            rev.append((EQ, a0 + x - 1, b0 + y - 1))
            x -= 1
            y -= 1
        if d > 0:
            if x == px:
                rev.append((ADD, -1, b0 + py))
            else:
                rev.append((DEL, a0 + px, -1))
        x, y = px, py
    rev.reverse()
    return rev


def intern(items: Sequence[str], table: dict[str, int]) -> list[int]:
    """Return `items` as integers, equal strings as equal integers (ids shared through `table`)."""
    put = table.setdefault  # a new string gets the next id: the table's size before it goes in
    return [put(s, len(table)) for s in items]
