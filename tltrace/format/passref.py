"""The one pass-name grammar: `--pass`, `--only`/`--skip` hints, the report's URL, `tltrace.load`.

A reference is a pass's exact name, an index (`16`, or `#16`: the one number every line that names a
pass prints, `show`'s `#` column), or `[phase/]NAME[#k]`: the k-th pass (1-based, default
the first) of the name NAME, where NAME is tried, in order, as the exact name, the name in
any case, the end of a dotted name (`BindTarget` for `tirx.BindTarget`), and a part of
one name. The report's twin is `resolveRef` in render/assets/core.js; tests/test_passref.py
runs both over the same cases. Pure: no I/O.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol


class _Rec(Protocol):
    @property
    def index(self) -> int: ...
    @property
    def name(self) -> str: ...
    @property
    def phase(self) -> str: ...


@dataclass(frozen=True)
class PassRef:
    """A parsed reference: an index, or a name with an optional phase and occurrence."""

    index: int | None = None
    phase: str | None = None
    name: str | None = None
    k: int | None = None  # None: the first, and the caller may say there are others


@dataclass(frozen=True)
class Resolved:
    """What a reference names: `pos` in the list (-1 with `error`), and every occurrence of the name."""

    pos: int
    matches: tuple[int, ...]
    error: str | None = None
    ref: PassRef | None = None

    @property
    def others(self) -> int:
        """Return how many other passes share the name, when the reference named no occurrence."""
        if self.pos < 0 or self.ref is None or self.ref.k is not None:
            return 0
        return len(self.matches) - 1


def parse(ref: str) -> PassRef:
    """Return a reference parsed: `16` (or `#16`, as every line that names a pass prints its number),
    `LowerTileOp`, `tl/Simplify#3`."""
    ref = ref.strip()
    if re.fullmatch(r"#?\d+", ref):
        return PassRef(index=int(ref.lstrip("#")))
    name, k = ref, None
    m = re.fullmatch(r"(.+)#(\d+)", ref)
    if m:
        name, k = m.group(1), int(m.group(2))
    phase = None
    slash = name.find("/")
    if slash > 0:
        phase, name = name[:slash], name[slash + 1 :]
    return PassRef(phase=phase, name=name, k=k)


def _tail(name: str) -> str:
    cut = max(name.rfind("."), name.rfind("/"))
    return name[cut + 1 :] if cut >= 0 else name


def candidates(records: Sequence[_Rec], phase: str | None, name: str) -> list[int]:
    """Return the positions NAME means, by the first test that matches any (see the module doc)."""
    low = name.lower()
    tests: list[Callable[[str], bool]] = [
        lambda n: n == name,
        lambda n: n.lower() == low,
        lambda n: _tail(n).lower() == low,
        lambda n: low in n.lower(),
    ]
    for test in tests:
        hits = [
            i
            for i, r in enumerate(records)
            if (phase is None or str(r.phase).lower() == phase.lower()) and test(r.name)
        ]
        if hits:
            return hits
    return []


def resolve(records: Sequence[_Rec], ref: str) -> Resolved:
    """Return what `ref` names among `records` (in order); never raises."""
    whole = [i for i, r in enumerate(records) if r.name == ref]
    if whole:  # a name that itself holds '/' or '#k' means itself
        return Resolved(whole[0], tuple(whole), None, PassRef(name=ref))
    p = parse(ref)
    if p.index is not None:
        for i, r in enumerate(records):
            if r.index == p.index:
                return Resolved(i, (i,), None, p)
        return Resolved(-1, (), f"no pass with index {p.index}", p)
    if not p.name:
        return Resolved(-1, (), f"no pass named {ref!r}", p)
    hits = candidates(records, p.phase, p.name)
    names: list[str] = []
    for h in hits:
        if records[h].name not in names:
            names.append(records[h].name)
    if len(names) > 1:
        return Resolved(-1, tuple(hits), f"pass {ref!r} matches several passes ({', '.join(names[:5])})", p)
    if not hits:
        return Resolved(-1, (), f"no pass named {ref!r}", p)
    k = 1 if p.k is None else p.k
    if not 1 <= k <= len(hits):
        return Resolved(-1, tuple(hits), f"pass {names[0]!r} ran {len(hits)} time(s); #{k} does not exist", p)
    return Resolved(hits[k - 1], tuple(hits), None, p)


def ref_of(records: Sequence[_Rec], pos: int) -> str:
    """Return the reference that names records[pos]: its name, with #k from its 2nd occurrence on."""
    name = records[pos].name
    k = sum(1 for r in records[: pos + 1] if r.name == name)
    return f"{name}#{k}" if k > 1 else name


def suggest(names: Iterable[str], word: str, n: int = 3) -> list[str]:
    """Return the pass names closest to a mistyped `word` (any case; a dotted name's last part
    counts too), best first: what a did-you-mean offers. Empty when none is close."""
    by_key: dict[str, str] = {}
    for name in names:
        for key in (name.lower(), _tail(name).lower()):
            by_key.setdefault(key, name)
    low = parse(word).name or word
    hits = difflib.get_close_matches(low.lower(), list(by_key), n=n * 2, cutoff=0.75)
    out: list[str] = []
    for h in hits:
        if by_key[h] not in out:
            out.append(by_key[h])
    return out[:n]


def did_you_mean(names: Iterable[str], word: str) -> str:
    """Return ` (did you mean 'X'?)` (or 'X' or 'Y') for a mistyped pass name, '' when nothing is close."""
    close = suggest(names, word)
    if not close:
        return ""
    return " (did you mean " + " or ".join(repr(c) for c in close) + "?)"
