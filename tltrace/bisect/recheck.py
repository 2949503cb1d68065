"""A deciding step of `tltrace bisect`, run again: two outcomes for one step make the script flaky."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Recheck:
    """A deciding step run again: the step, its outcome, the re-run's number and outcome."""

    step: int
    outcome: str
    again: int
    again_outcome: str
    skipped: tuple[int, ...]

    @property
    def agrees(self) -> bool:
        return self.outcome == self.again_outcome

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "skipped": list(self.skipped), "agrees": self.agrees}
