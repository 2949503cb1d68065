"""How often a pattern occurs in every recorded text of a compile, and the passes that changed it
(`show RUN --count PATTERN`, `diff-runs A B --count PATTERN`).

A pattern is a regular expression, or a known operation (`T.sync_threads`, `tl.tma_load`,
`cp_async`, ...: `KNOWN`) that is spelled differently at each stage: `T.tvm_storage_sync("shared")`
in TIR, `__syncthreads()` in the generated CUDA, `bar.sync` in PTX, `BAR.SYNC` in SASS. Each
text is counted in its own language: a pass's before and after texts are TIR, a codegen
call's before is TIR and its after the generated source, the PTX stage reads CUDA and gives
PTX, the SASS stage reads PTX and gives SASS. A pass changed the count when its after text
holds a different number of matches than its before text. Derived when read, never stored:
the texts are the records'.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import UsageError
from ..format.records import CODEGEN, STAGE_ROLES, PassRecord

if TYPE_CHECKING:
    from .loading import Run

TIR, SOURCE, PTX, SASS = "tir", "source", "ptx", "sass"
LANGUAGES = (TIR, SOURCE, PTX, SASS)
REGEX_PREFIX = "re:"  # `--count 're:cp_async'`: the regex, not the known operation of that name

_CALL = r"\s*(?:<[^;{}()]*>)?\s*\("  # a C++ call: an optional template argument list, then '('


@dataclass(frozen=True)
class Known:
    """A known operation: the names it answers to and its regex in each language (None: no spelling)."""

    name: str
    aliases: tuple[str, ...]
    regex: dict[str, str | None]
    what: str


KNOWN: tuple[Known, ...] = (
    Known(
        "T.sync_threads",
        ("sync_threads", "syncthreads", "__syncthreads", "tvm_storage_sync"),
        {
            TIR: r'\bT\.tvm_storage_sync\(\s*"shared(?:\.dyn)?"\s*\)|\bT\.sync_threads\(',
            SOURCE: r"\b__syncthreads\s*\(",
            PTX: r"\bbar(?:rier)?\.sync(?:\.aligned)?\s+0\b",
            SASS: r"\bBAR\.SYNC\b",
        },
        "a block-wide barrier (__syncthreads)",
    ),
    Known(
        "tl.tma_load",
        ("T.tma_load", "tma_load"),
        {
            TIR: r"\bT\.tma_load\(",
            SOURCE: r"\btma_load\w*" + _CALL,
            PTX: r"\bcp\.async\.bulk\.tensor\.\w+\.shared::cluster\.global\b",
            SASS: r"\bUTMALDG\b",
        },
        "a TMA load (global to shared)",
    ),
    Known(
        "tl.tma_store",
        ("T.tma_store", "tma_store"),
        {
            TIR: r"\bT\.tma_store\(",
            SOURCE: r"\btma_store\w*" + _CALL,
            PTX: r"\bcp\.async\.bulk\.tensor\.\w+\.global\.shared::cta\b",
            SASS: r"\bUTMASTG\b",
        },
        "a TMA store (shared to global)",
    ),
    Known(
        "cp_async",
        ("T.ptx_cp_async", "tl.cp_async", "cp.async"),
        {
            TIR: r"\bT\.ptx_cp_async\(",
            SOURCE: r"\bcp_async_gs\w*" + _CALL,
            PTX: r"\bcp\.async\.c[ag]\.shared\b",
            SASS: r"\bLDGSTS\b",
        },
        "an asynchronous copy (cp.async, sm_80)",
    ),
    Known(
        "cp_async_commit",
        ("T.ptx_commit_group", "commit_group"),
        {
            TIR: r"\bT\.ptx_commit_group\(",
            SOURCE: r"\bcp_async_commit\s*\(",
            PTX: r"\bcp\.async\.commit_group\b",
            SASS: r"\bLDGDEPBAR\b",
        },
        "a cp.async commit group",
    ),
    Known(
        "cp_async_wait",
        ("T.ptx_wait_group", "wait_group"),
        {
            TIR: r"\bT\.ptx_wait_group\(",
            SOURCE: r"\bcp_async_wait" + _CALL,
            PTX: r"\bcp\.async\.wait_group\b",
            SASS: r"\bDEPBAR\b",
        },
        "a wait for cp.async groups",
    ),
    Known(
        "mbarrier_wait",
        ("T.mbarrier_wait_parity", "mbarrier_wait_parity"),
        {
            TIR: r"\bT\.mbarrier_wait_parity\(",
            SOURCE: r"\bmbarrier\w*\s*\[[^\]\n]*\]\s*\.\s*wait\s*\(|\bmbarrier_wait\w*\s*\(",
            PTX: r"\bmbarrier\.try_wait\b",
            SASS: None,
        },
        "a wait on an mbarrier's phase",
    ),
    Known(
        "mbarrier_arrive",
        ("T.ptx_arrive_barrier", "ptx_arrive_barrier"),
        {
            TIR: r"\bT\.ptx_arrive_barrier(?:_expect_tx)?\(",
            SOURCE: r"\bmbarrier\w*\s*\[[^\]\n]*\]\s*\.\s*arrive\w*\s*\(",
            PTX: r"\bmbarrier\.arrive\b",
            SASS: None,
        },
        "an arrive on an mbarrier",
    ),
    Known(
        "wgmma",
        ("T.ptx_wgmma", "tl.wgmma"),
        {
            TIR: r"\bT\.ptx_wgmma_\w+\(",
            SOURCE: r"\bwgmma_(?!desc)\w+" + _CALL,
            PTX: r"\bwgmma\.mma_async\b",
            SASS: r"\bHGMMA\b",
        },
        "a warpgroup MMA (sm_90)",
    ),
    Known(
        "mma",
        ("T.ptx_mma", "mma_sync"),
        {
            TIR: r"\bT\.ptx_mma\(",
            SOURCE: r"\bmma_sync\w*" + _CALL,
            PTX: r"\bmma\.sync\b",
            SASS: r"\bHMMA\b",
        },
        "a warp MMA (mma.sync)",
    ),
)


@dataclass(frozen=True)
class Pattern:
    """What `--count SPEC` counts: one compiled regex per language (None where it has no spelling)."""

    spec: str
    known: str | None  # the known operation's name, None for a regex
    regex: dict[str, re.Pattern[str] | None]

    def to_json(self) -> dict[str, Any]:
        return {
            "spec": self.spec,
            "known": self.known,
            "regex": {k: (p.pattern if p is not None else None) for k, p in self.regex.items()},
        }


def known_names() -> list[str]:
    """Return the names of the known operations, as the table spells them."""
    return [k.name for k in KNOWN]


def _lookup(spec: str) -> Known | None:
    low = spec.strip().lower()
    for k in KNOWN:
        if low in (n.lower() for n in (k.name, *k.aliases)):
            return k
    return None


def pattern(spec: str) -> Pattern:
    """Return the pattern `spec` names: a known operation (any case, or an alias), else a regex
    (`re:` forces a regex); UsageError (exit 2, one line) for an empty or invalid one."""
    if not spec.strip():
        raise UsageError(f"--count needs a regex or a known operation ({', '.join(known_names())})")
    k = None if spec.startswith(REGEX_PREFIX) else _lookup(spec)
    if k is not None:
        return Pattern(spec, k.name, {lang: _compile(r, spec) if r else None for lang, r in k.regex.items()})
    text = spec[len(REGEX_PREFIX) :] if spec.startswith(REGEX_PREFIX) else spec
    one = _compile(text, spec)
    if one.search(""):
        raise UsageError(f"--count {spec!r} matches the empty string: every text would count it everywhere")
    return Pattern(spec, None, dict.fromkeys(LANGUAGES, one))


def _compile(text: str, spec: str) -> re.Pattern[str]:
    try:
        return re.compile(text)
    except re.error as exc:
        raise UsageError(f"--count {spec!r} is not a valid regular expression: {exc}") from None


def languages(rec: PassRecord) -> tuple[str, str]:
    """Return the languages of a record's (before, after) texts."""
    if rec.role in STAGE_ROLES:
        return (SOURCE if rec.role == PTX else PTX), rec.role
    if rec.status == CODEGEN or rec.role in ("device", "host"):
        return TIR, SOURCE
    return TIR, TIR


@dataclass(frozen=True)
class Row:
    """One record's counts: before and after its pass (None: no text, or no spelling in its language)."""

    index: int
    name: str
    phase: str
    depth: int
    role: str | None
    languages: tuple[str, str]
    before: int | None
    after: int | None

    @property
    def changed(self) -> bool:
        return self.before is not None and self.after is not None and self.before != self.after

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "name": self.name,
            "phase": self.phase,
            "depth": self.depth,
            "role": self.role,
            "before_language": self.languages[0],
            "after_language": self.languages[1],
            "before": self.before,
            "after": self.after,
            "changed": self.changed,
        }


@dataclass(frozen=True)
class Counts:
    """A pattern counted over one compile's records, in record order."""

    pattern: Pattern
    rows: tuple[Row, ...]

    @property
    def changes(self) -> tuple[Row, ...]:
        return tuple(r for r in self.rows if r.changed)

    @property
    def matched(self) -> bool:
        """Whether the pattern matched in any text at all."""
        return any((r.before or 0) > 0 or (r.after or 0) > 0 for r in self.rows)

    def to_json(self) -> dict[str, Any]:
        return {
            "pattern": self.pattern.to_json(),
            "passes": [r.to_json() for r in self.rows],
            "changes": [r.to_json() for r in self.changes],
            "matched": self.matched,
        }


def count_run(run: Run, pat: Pattern) -> Counts:
    """Return `pat` counted in every recorded text of `run` (one text is read and counted once)."""
    from .texts import text_of

    manifest = run.require()
    memo: dict[tuple[str, str], int | None] = {}

    def count(rec: PassRecord, side: str, lang: str) -> int | None:
        rx = pat.regex.get(lang)
        digest = rec.before_hash if side == "before" else rec.after_hash
        if rx is None or digest is None:
            return None
        key = (digest, lang)
        if key not in memo:
            text = text_of(run.path, rec, side, errors="replace")
            memo[key] = None if text is None else sum(1 for _ in rx.finditer(text))
        return memo[key]

    rows = []
    for rec in manifest.records:
        lb, la = languages(rec)
        rows.append(
            Row(
                rec.index,
                rec.name,
                rec.phase,
                rec.depth,
                rec.role,
                (lb, la),
                count(rec, "before", lb),
                count(rec, "after", la),
            )
        )
    return Counts(pat, tuple(rows))


def side_by_side(d: Any, a: Counts, b: Counts) -> list[dict[str, Any]]:
    """Return the counts of two compiles per aligned pass (the pairs of `d`, a history.compare.RunDiff:
    phase, name and occurrence), each row saying whether the counts after it differ."""
    by_a = {r.index: r for r in a.rows}
    by_b = {r.index: r for r in b.rows}
    out = []
    for p in d.pairs:
        ra = by_a.get(p.a.index) if p.a is not None else None
        rb = by_b.get(p.b.index) if p.b is not None else None
        va = ra.after if ra is not None else None
        vb = rb.after if rb is not None else None
        out.append(
            {
                "label": p.label,
                "phase": p.key[0],
                "name": p.key[1],
                "occurrence": p.key[2],
                "a_index": p.a.index if p.a is not None else None,
                "b_index": p.b.index if p.b is not None else None,
                "a": va,
                "b": vb,
                "a_changed": bool(ra and ra.changed),
                "b_changed": bool(rb and rb.changed),
                "differs": va != vb,
            }
        )
    return out
