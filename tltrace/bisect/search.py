"""The search of `tltrace bisect`, pure: which candidates to skip next, and what the outcomes say.

The candidates are the skippable passes in pipeline order, numbered 0 .. k-1. With one
pass to blame (j), a step that skips a set W of candidates is right when j is in W and
wrong when it is not. So the search halves the suspects S: skip the first half; right
means S = that half, wrong means S = the other half. A step that does not compile is
untestable (a skipped pass was required there): then the other half is tried, and when
both halves are untestable, S is cut into quarters, eighths, ... (`git bisect skip` in
spirit). Skipping only a window of the suspects, never the whole rest of the pipeline,
keeps the passes after it running, so far fewer steps fail to compile than when every
pass after a limit is skipped. A single suspect never shown right is verified alone.
No I/O.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

RIGHT = "right"
WRONG = "wrong"
UNTESTABLE = "untestable"
OUTCOMES = (RIGHT, WRONG, UNTESTABLE)


@dataclass
class WindowSearch:
    """The suspects among `k` candidates, and the windows of them still to try in this round."""

    k: int
    proven: bool = False  # some step was right: the pass to blame is a candidate
    suspects: list[int] = field(default_factory=list)
    required: set[int] = field(default_factory=set)  # candidates whose skipping alone does not compile
    _pending: list[tuple[int, ...]] = field(default_factory=list)
    _parts: int = 2

    def __post_init__(self) -> None:
        if not self.suspects:
            self.suspects = list(range(self.k))
        self._round(2)

    def _round(self, parts: int) -> None:
        s = self.suspects
        self._parts = parts
        n = min(parts, len(s))
        cuts = [round(i * len(s) / n) for i in range(n + 1)] if n else [0]
        self._pending = [tuple(s[cuts[i] : cuts[i + 1]]) for i in range(n)]

    def next(self) -> tuple[int, ...] | None:
        """Return the candidates the next step skips, or None when the search is over."""
        if not self.suspects:
            return None
        if len(self.suspects) == 1:
            only = self.suspects[0]
            return None if self.proven or only in self.required else (only,)
        while self._pending and all(len(w) == 1 and w[0] in self.required for w in self._pending[:1]):
            self._pending.pop(0)
        return self._pending[0] if self._pending else None

    def record(self, window: tuple[int, ...], outcome: str) -> None:
        if outcome not in OUTCOMES:
            raise ValueError(f"not an outcome: {outcome!r}")
        if self._pending and self._pending[0] == window:
            self._pending.pop(0)
        if outcome == RIGHT:
            self.proven = True
            self.suspects = [i for i in self.suspects if i in window]
            self._round(2)
        elif outcome == WRONG:
            self.suspects = [i for i in self.suspects if i not in window]
            if len(window) == 1 and len(self.suspects) == 0:
                return
            self._round(2)
        else:
            if len(window) == 1:
                self.required.add(window[0])
            if not self._pending and len(self.suspects) > 1 and self._parts < len(self.suspects):
                self._round(self._parts * 2)

    def found(self) -> int | None:
        """Return the candidate to blame, once one is proven; else None."""
        return self.suspects[0] if self.proven and len(self.suspects) == 1 else None

    def steps_left(self) -> int:
        """Return how many more steps the search takes when every step compiles."""
        n = len(self.suspects)
        if self.found() is not None or n == 0:
            return 0
        return math.ceil(math.log2(n)) + (0 if self.proven else 1)
