"""Compare two runs pass by pass. Pure: manifests in, a RunDiff out; no I/O.

Passes are aligned by (phase, name, occurrence), never by index: a pass that ran
in only one run shifts every index after it, but not the keys. Each aligned pair
is compared by the hashes of its input and output texts.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..format.records import PassRecord, RunManifest

SAME = "same"
OUTPUT_DIFFERS = "output differs"
INPUT_DIFFERS = "input differs"
ONLY_A = "only in A"
ONLY_B = "only in B"
STATUSES = (SAME, OUTPUT_DIFFERS, INPUT_DIFFERS, ONLY_A, ONLY_B)

Key = tuple[str, str, int]  # (phase, name, occurrence starting at 1)


@dataclass(frozen=True)
class PassPair:
    """One row of the comparison: a pass in A, in B, or in both."""

    key: Key
    a: PassRecord | None
    b: PassRecord | None
    status: str

    @property
    def label(self) -> str:
        phase, name, occ = self.key
        return f"{phase}/{name}" + (f"#{occ}" if occ > 1 else "")

    def to_json(self) -> dict[str, Any]:
        return {
            "phase": self.key[0],
            "name": self.key[1],
            "occurrence": self.key[2],
            "status": self.status,
            "a_index": self.a.index if self.a else None,
            "b_index": self.b.index if self.b else None,
            "a_status": self.a.status if self.a else None,
            "b_status": self.b.status if self.b else None,
        }


@dataclass(frozen=True)
class RunDiff:
    """The comparison of run A with run B."""

    a: RunManifest
    b: RunManifest
    pairs: tuple[PassPair, ...]
    first_output_divergence: PassPair | None  # input matched in both runs, output differs
    first_input_divergence: PassPair | None  # the first pass whose input differs
    first_output_change: PassPair | None = None  # the first aligned pass whose output differs, input or not
    codegen: dict[str, str] = field(default_factory=dict)  # role -> SAME / "differs" / ONLY_A / ONLY_B

    @property
    def same(self) -> bool:
        return all(p.status == SAME for p in self.pairs)

    @property
    def counts(self) -> dict[str, int]:
        c = Counter(p.status for p in self.pairs)
        return {s: c.get(s, 0) for s in STATUSES}

    @property
    def first_difference(self) -> PassPair | None:
        """The first row (in pipeline order) that is not SAME."""
        return next((p for p in self.pairs if p.status != SAME), None)

    @property
    def changed_in_kind(self) -> tuple[PassPair, ...]:
        """The rows whose pass did a different kind of work: ran on one side only, changed the IR
        on one side and not the other (or failed on one), or made a different output of the same input.

        After a change to the kernel every pass sees a different input; these are the passes
        whose *work* differs, which is what a reader wants first (not every `input differs` row).
        """
        return tuple(
            p
            for p in self.pairs
            if p.status in (ONLY_A, ONLY_B, OUTPUT_DIFFERS)
            or (
                p.status == INPUT_DIFFERS and p.a is not None and p.b is not None and p.a.status != p.b.status
            )
        )

    def to_json(self) -> dict[str, Any]:
        def ref(p: PassPair | None) -> dict[str, Any] | None:
            return p.to_json() if p is not None else None

        return {
            "a": _run_header(self.a),
            "b": _run_header(self.b),
            "same": self.same,
            "counts": self.counts,
            "first_output_divergence": ref(self.first_output_divergence),
            "first_input_divergence": ref(self.first_input_divergence),
            "first_output_change": ref(self.first_output_change),
            "first_difference": ref(self.first_difference),
            "codegen": dict(self.codegen),
            "changed_in_kind": [p.to_json() for p in self.changed_in_kind],
            "passes": [p.to_json() for p in self.pairs],
        }


def _run_header(m: RunManifest) -> dict[str, Any]:
    return {
        "run_id": m.run_id,
        "script": m.script,
        "kernel": m.kernel,
        "signature": m.signature,
        "invocation": m.invocation,
        "target": m.target,
        "backend": m.backend,
        "status": m.status,
        "passes": len(m.records),
    }


def keyed(records: tuple[PassRecord, ...] | list[PassRecord]) -> list[tuple[Key, PassRecord]]:
    """Return the records in index order, each with its (phase, name, occurrence) key."""
    seen: Counter[tuple[str, str]] = Counter()
    out = []
    for r in sorted(records, key=lambda r: r.index):
        seen[(r.phase, r.name)] += 1
        out.append(((r.phase, r.name, seen[(r.phase, r.name)]), r))
    return out


def align(
    a: list[PassRecord] | tuple[PassRecord, ...], b: list[PassRecord] | tuple[PassRecord, ...]
) -> list[tuple[Key, PassRecord | None, PassRecord | None]]:
    """Pair the records of two runs by key, in A's order, with B-only passes placed after their predecessor in B."""
    ka, kb = keyed(a), keyed(b)
    in_b = dict(kb)
    in_a = {k for k, _ in ka}
    rows: list[tuple[Key, PassRecord | None, PassRecord | None]] = [(k, r, in_b.get(k)) for k, r in ka]
    # B-only passes: each goes right after the row of the nearest earlier B pass that A also ran.
    inserts: dict[Key | None, list[tuple[Key, PassRecord]]] = {}
    anchor: Key | None = None
    for k, r in kb:
        if k in in_a:
            anchor = k
        else:
            inserts.setdefault(anchor, []).append((k, r))
    if not inserts:
        return rows
    out: list[tuple[Key, PassRecord | None, PassRecord | None]] = [
        (k, None, r) for k, r in inserts.get(None, [])
    ]
    for row in rows:
        out.append(row)
        for k, r in inserts.get(row[0], []):
            out.append((k, None, r))
    return out


def classify(a: PassRecord | None, b: PassRecord | None) -> str:
    """Return how one aligned pair compares."""
    if b is None:
        return ONLY_A
    if a is None:
        return ONLY_B
    if a.before_hash != b.before_hash:
        return INPUT_DIFFERS
    if a.after_hash != b.after_hash or a.status != b.status:
        return OUTPUT_DIFFERS
    return SAME


def diff_runs(a: RunManifest, b: RunManifest) -> RunDiff:
    """Return the pass-by-pass comparison of run A with run B."""
    pairs = tuple(PassPair(k, ra, rb, classify(ra, rb)) for k, ra, rb in align(a.records, b.records))
    first_out = next((p for p in pairs if p.status == OUTPUT_DIFFERS), None)
    first_in = next((p for p in pairs if p.status == INPUT_DIFFERS), None)
    first_change = next(
        (
            p
            for p in pairs
            if p.a is not None
            and p.b is not None
            and (p.a.after_hash != p.b.after_hash or p.a.status != p.b.status)
        ),
        None,
    )
    return RunDiff(a, b, pairs, first_out, first_in, first_change, _codegen_by_role(pairs))


def _codegen_by_role(pairs: tuple[PassPair, ...]) -> dict[str, str]:
    """Compare the generated sources per role ('device', 'host', or 'codegen' when unlabelled)."""
    out: dict[str, str] = {}
    for p in pairs:
        rec = p.a or p.b
        if rec is None or rec.status != "codegen" and rec.phase != "codegen":
            continue
        role = rec.role or (
            rec.name.removeprefix("codegen_") if rec.name.startswith("codegen_") else "codegen"
        )
        if p.key[2] > 1:
            role = f"{role}#{p.key[2]}"
        if p.status in (ONLY_A, ONLY_B):
            out[role] = p.status
        elif p.a is not None and p.b is not None and p.a.after_hash == p.b.after_hash:
            out[role] = SAME
        else:
            out[role] = "differs"
    return out


# -- invocations ---------------------------------------------------------------------------------
COMPILE_SAME = "same"
COMPILE_DIFFERENT = "different"
COMPILE_ONLY_A = "only_a"
COMPILE_ONLY_B = "only_b"
COMPILE_STATUSES = (COMPILE_SAME, COMPILE_DIFFERENT, COMPILE_ONLY_A, COMPILE_ONLY_B)


def launch_key(m: RunManifest) -> str | None:
    """Return a canonical text of a compile's launch shape (None when the manifest has none)."""
    if not m.launch:
        return None
    import json

    try:
        return json.dumps(m.launch, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return None


def pair_compiles(a: list[RunManifest], b: list[RunManifest]) -> list[tuple[int | None, int | None, str]]:
    """Pair the compiles of two invocations; return (index in a, index in b, how) per pair, in A's order.

    Identical input IR (input_hash) pairs first, one to one in compile order; then
    the same kernel name with the same launch shape; then, for a kernel left with
    one compile on each side, the kernel name alone (a changed launch shape of the
    only compile of a kernel, or manifests that record no launch shape). The rest
    are unpaired. `how` is 'input', 'shape', 'kernel' or '' (unpaired).
    """
    left_a = list(range(len(a)))
    left_b = list(range(len(b)))
    pairs: dict[int, tuple[int, str]] = {}  # a index -> (b index, how)

    def match(key_of, how: str) -> None:
        by_key: dict[Any, list[int]] = {}
        for j in left_b:
            k = key_of(b[j])
            if k is not None:
                by_key.setdefault(k, []).append(j)
        for i in list(left_a):
            k = key_of(a[i])
            if k is not None and by_key.get(k):
                j = by_key[k].pop(0)
                pairs[i] = (j, how)
                left_a.remove(i)
                left_b.remove(j)

    match(lambda m: m.input_hash, "input")
    match(lambda m: (m.kernel, launch_key(m)) if m.kernel is not None else None, "shape")
    ka = Counter(a[i].kernel for i in left_a)
    kb = Counter(b[j].kernel for j in left_b)
    match(
        lambda m: m.kernel if m.kernel is not None and ka[m.kernel] == 1 and kb[m.kernel] == 1 else None,
        "kernel",
    )
    out: list[tuple[int | None, int | None, str]] = []
    for i in range(len(a)):
        if i in pairs:
            out.append((i, pairs[i][0], pairs[i][1]))
        else:
            out.append((i, None, ""))
    # B-only compiles go after the A compile paired with their nearest earlier B neighbour.
    b_to_row = {j: n for n, (_, j, _) in enumerate(out) if j is not None}
    for j in sorted(left_b):
        anchor = max((b_to_row[k] for k in b_to_row if k < j), default=-1)
        out.insert(anchor + 1, (None, j, ""))
        b_to_row = {jj: n for n, (_, jj, _) in enumerate(out) if jj is not None}
    return out


@dataclass(frozen=True)
class CompilePair:
    """One row of an invocation comparison: a compile in A, in B, or in both (with its RunDiff)."""

    a: RunManifest | None
    b: RunManifest | None
    how: str  # input / shape / kernel / '' (unpaired)
    diff: RunDiff | None

    @property
    def status(self) -> str:
        if self.b is None:
            return COMPILE_ONLY_A
        if self.a is None:
            return COMPILE_ONLY_B
        return COMPILE_SAME if self.diff is not None and self.diff.same else COMPILE_DIFFERENT

    def to_json(self) -> dict[str, Any]:
        d = self.diff
        first = d.first_difference if d is not None else None
        either = self.a or self.b
        out: dict[str, Any] = {
            "status": self.status,
            "paired_by": self.how or None,
            "a_run_id": self.a.run_id if self.a else None,
            "b_run_id": self.b.run_id if self.b else None,
            "a_signature": _sig(self.a),
            "b_signature": _sig(self.b),
            "kernel": either.kernel if either is not None else None,
        }
        if d is not None:
            out["counts"] = d.counts
            out["first_difference"] = first.to_json() if first else None
            out["first_output_divergence"] = (
                d.first_output_divergence.to_json() if d.first_output_divergence else None
            )
            out["first_input_divergence"] = (
                d.first_input_divergence.to_json() if d.first_input_divergence else None
            )
            out["codegen"] = dict(d.codegen)
        return out


def _sig(m: RunManifest | None) -> str | None:
    if m is None:
        return None
    return m.signature or m.kernel


@dataclass(frozen=True)
class InvocationDiff:
    """The comparison of invocation A with invocation B: one CompilePair per compile."""

    compiles: tuple[CompilePair, ...]

    @property
    def same(self) -> bool:
        return all(c.status == COMPILE_SAME for c in self.compiles)

    @property
    def counts(self) -> dict[str, int]:
        c = Counter(p.status for p in self.compiles)
        return {s: c.get(s, 0) for s in COMPILE_STATUSES}

    def to_json(self) -> dict[str, Any]:
        return {"same": self.same, "counts": self.counts, "compiles": [c.to_json() for c in self.compiles]}


def diff_invocations(a: list[RunManifest], b: list[RunManifest]) -> InvocationDiff:
    """Return the compile-by-compile comparison of two invocations (each compile's manifests, start order)."""
    rows = []
    for i, j, how in pair_compiles(a, b):
        ma = a[i] if i is not None else None
        mb = b[j] if j is not None else None
        rows.append(
            CompilePair(ma, mb, how, diff_runs(ma, mb) if ma is not None and mb is not None else None)
        )
    return InvocationDiff(tuple(rows))
