"""Two py-spy profiles of the same autotune side by side (bench/gpu.sh profile, PROFILE_MODES="untraced quiet").

    python bench/profile_diff.py UNTRACED.txt TRACED.txt [--top 45]

Prints (1) for the compiling threads (bench/profile_threads.py's rule: a sample inside
TileLang's lowering), the functions whose inclusive samples grew most from the untraced run
to the traced one, and the leaves that grew most; (2) for tltrace's workers in the traced run,
where their busy samples go (a worker asleep on its gate is idle and left out). Samples are
py-spy's `--idle` ones: a thread waiting (for the GIL, a lock, I/O) counts where it waits.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import profile_threads as pt  # noqa: E402

_LINE = re.compile(r":\d+\)$")
_PREFIX = re.compile(r"\(/.*?/(site-packages|site|main)/")
IDLE = "Worker._run ("  # a worker asleep: this frame, at the gate's acquire (_idle)


def _key(frame: str) -> str:
    return _LINE.sub(")", _PREFIX.sub("(", frame))


def compiling(path: Path) -> tuple[int, Counter[str], Counter[str]]:
    """(samples, inclusive counts, leaf counts) of the compiling threads of a profile."""
    threads = pt.parse(path.read_text())
    incl: Counter[str] = Counter()
    leaf: Counter[str] = Counter()
    total = 0
    for stacks in threads.values():
        if not any(pt.LOWER in f for frames, _ in stacks for f in frames):
            continue
        for frames, n in stacks:
            total += n
            for k in {_key(f) for f in frames}:
                incl[k] += n
            if frames:
                leaf[_key(frames[-1])] += n
    return total, incl, leaf


def _idle(frames: list[str]) -> bool:
    """A worker asleep on its gate: its innermost frame is Worker._run at the gate's acquire."""
    return bool(frames) and frames[-1].startswith(IDLE) and _is_gate(frames[-1])


_GATE: list[int] = []


def _is_gate(frame: str) -> bool:
    """Whether `frame` is at the line where a worker sleeps (this checkout's session/worker.py)."""
    if not _GATE:
        import inspect

        from tltrace.session import worker

        src, start = inspect.getsourcelines(worker.Worker._run)
        _GATE.extend(start + i for i, s in enumerate(src) if s.strip() == "gate.acquire()")
    m = re.search(r":(\d+)\)$", frame)
    return m is not None and int(m.group(1)) in _GATE


def workers(path: Path) -> tuple[int, int, Counter[str]]:
    """(busy samples, idle samples, inclusive counts of the busy ones) of tltrace's workers."""
    threads = pt.parse(path.read_text())
    incl: Counter[str] = Counter()
    busy = idle = 0
    for stacks in threads.values():
        for frames, n in stacks:
            if not any(IDLE in f for f in frames):
                continue
            if _idle(frames):
                idle += n
                continue
            busy += n
            for k in {_key(f) for f in frames}:
                incl[k] += n
    return busy, idle, incl


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("untraced", type=Path)
    ap.add_argument("traced", type=Path)
    ap.add_argument("--top", type=int, default=45)
    a = ap.parse_args()
    tu, iu, lu = compiling(a.untraced)
    tq, iq, lq = compiling(a.traced)
    print(f"compiling threads' samples: untraced {tu}, traced {tq}")
    print("--- inclusive, largest growth: growth, untraced, traced, function")
    for k in sorted(iq, key=lambda k: -(iq[k] - iu.get(k, 0)))[: a.top]:
        print(f"{iq[k] - iu.get(k, 0):6d} {iu.get(k, 0):6d} {iq[k]:6d}  {k[:150]}")
    print("--- leaves, largest growth")
    for k in sorted(lq, key=lambda k: -(lq[k] - lu.get(k, 0)))[:25]:
        print(f"{lq[k] - lu.get(k, 0):6d} {lu.get(k, 0):6d} {lq[k]:6d}  {k[:150]}")
    busy, idle, incl = workers(a.traced)
    print(f"--- tltrace's workers (traced run): busy samples {busy}, idle {idle}; busy, by function")
    for k, v in incl.most_common(a.top):
        print(f"{v:6d} {v / max(busy, 1) * 100:5.1f}%  {k[:140]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
