"""A line-based three-way merge (diff3), pure: `merge3(base, ours, theirs) -> MergeResult`.

Regions of `base` that neither side changed are "stable"; between them each side
either kept the base text (take the other side), made the same change (take it
once), or made different changes (a conflict, shown with the standard markers).
Adjacent changes conflict, as in diff3 and git. Laws (tested with hypothesis):
merge3(b, b, t) == t, merge3(b, o, b) == o, merge3(b, x, x) == x.
"""

from __future__ import annotations

from dataclasses import dataclass
from difflib import SequenceMatcher

OURS_MARK = "<<<<<<< "
BASE_MARK = "||||||| "
SEP_MARK = "=======\n"
THEIRS_MARK = ">>>>>>> "


@dataclass(frozen=True)
class MergeResult:
    """The merged text and how many conflict regions it holds (0 = clean)."""

    text: str
    conflicts: int

    @property
    def clean(self) -> bool:
        return self.conflicts == 0


def _matches(a: list[str], b: list[str]) -> list[tuple[int, int, int]]:
    """Return (i, j, n) blocks with a[i:i+n] == b[j:j+n], ascending, without the final sentinel."""
    return [
        (m[0], m[1], m[2]) for m in SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks() if m[2]
    ]


def _stable_regions(base: list[str], ours: list[str], theirs: list[str]) -> list[tuple[int, int, int, int]]:
    """Return (base_start, ours_start, theirs_start, length) of runs unchanged on both sides."""
    mo, mt = _matches(base, ours), _matches(base, theirs)
    out: list[tuple[int, int, int, int]] = []
    i = j = 0
    while i < len(mo) and j < len(mt):
        ab, ao, an = mo[i]
        bb, bt, bn = mt[j]
        lo = max(ab, bb)
        hi = min(ab + an, bb + bn)
        if lo < hi:
            out.append((lo, ao + (lo - ab), bt + (lo - bb), hi - lo))
        if ab + an < bb + bn:
            i += 1
        else:
            j += 1
    out.append((len(base), len(ours), len(theirs), 0))  # sentinel: flushes the last region
    return out


def marker_line(text: str) -> int | None:
    """Return the 1-based line of the first unresolved conflict region in `text` (a `<<<<<<<` line
    with a later `>>>>>>>` line), None when there is none."""
    start = None
    for n, line in enumerate(text.splitlines(), 1):
        if start is None and line.startswith(OURS_MARK.rstrip()):
            start = n
        elif start is not None and line.startswith(THEIRS_MARK.rstrip()):
            return start
    return None


def take_side(text: str, side: str) -> tuple[str, int]:
    """Resolve every marked region of `text` by taking `side` ("ours" or "theirs"); return (text, regions)."""
    out: list[str] = []
    state = None  # None outside a region; "ours", "base", "theirs" inside
    regions = 0
    for line in text.splitlines(keepends=True):
        bare = line.rstrip("\r\n")
        if state is None and bare.startswith(OURS_MARK.rstrip()):
            state, regions = "ours", regions + 1
        elif state in ("ours", "base") and bare.startswith(BASE_MARK.rstrip()):
            state = "base"
        elif state in ("ours", "base") and bare == SEP_MARK.rstrip():
            state = "theirs"
        elif state == "theirs" and bare.startswith(THEIRS_MARK.rstrip()):
            state = None
        elif state is None or state == side:
            out.append(line)
    return "".join(out), regions


def _ensure_newline(lines: list[str]) -> list[str]:
    if lines and not lines[-1].endswith(("\n", "\r")):
        return [*lines[:-1], lines[-1] + "\n"]
    return lines


def merge3(
    base: str,
    ours: str,
    theirs: str,
    *,
    ours_label: str = "ours",
    theirs_label: str = "theirs",
    base_label: str | None = None,
) -> MergeResult:
    """Return the three-way merge of `ours` and `theirs`, both derived from `base`.

    With `base_label`, conflicts also show the base text (diff3 style).
    """
    b = base.splitlines(keepends=True)
    o = ours.splitlines(keepends=True)
    t = theirs.splitlines(keepends=True)
    out: list[str] = []
    conflicts = 0
    bi = oi = ti = 0
    for bs, os_, ts, n in _stable_regions(b, o, t):
        cb, co, ct = b[bi:bs], o[oi:os_], t[ti:ts]
        if cb or co or ct:
            if co == cb:
                out += ct
            elif ct == cb or co == ct:
                out += co
            else:
                conflicts += 1
                out.append(f"{OURS_MARK}{ours_label}\n")
                out += _ensure_newline(co)
                if base_label is not None:
                    out.append(f"{BASE_MARK}{base_label}\n")
                    out += _ensure_newline(cb)
                out.append(SEP_MARK)
                out += _ensure_newline(ct)
                out.append(f"{THEIRS_MARK}{theirs_label}\n")
        out += b[bs : bs + n]
        bi, oi, ti = bs + n, os_ + n, ts + n
    return MergeResult("".join(out), conflicts)
