"""Synthetic compile traces for tests and benchmarks: the events of n-pass runs, without TileLang.

Moved out of the package (tltrace.render.html) so that test fixtures do not ship:
tests and bench/ import it from here.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from tltrace.format.layout import text_hash
from tltrace.format.records import FAILED, PassRecord, RunManifest
from tltrace.render.html import REPORT_NAME, HtmlReportListener
from tltrace.session.events import Event, PassRecorded, RunFinished, RunStarted

_IR_TEMPLATE = """# from tvm.script import tir as T

@T.prim_func
def {kernel}(A: T.Buffer((1024, 1024), "float32"), B: T.Buffer((1024, 1024), "float32"), C: T.Buffer((1024, 1024), "float32")):
    T.func_attr({{"global_symbol": "{kernel}", "target": T.target("c")}})
    with T.block("root"):
        T.reads()
        T.writes()
"""


def cpu_manifest(run_id: str, script: str, kernel: str, **more: Any) -> RunManifest:
    """A run's manifest as a CPU html run of `tltrace run <script>.py` starting now writes it; `more` fields on top."""
    import time

    return RunManifest(
        run_id=run_id,
        script=script,
        kernel=kernel,
        target="c",
        backend="cython",
        tilelang_version="0.1.15",
        command=["tltrace", "run", f"{script}.py"],
        started=time.time(),
        mode="html",
        **more,
    )


def synthetic_events(
    n: int,
    script_dir: Path,
    *,
    kernel: str = "synthetic_kernel",
    lines: int = 120,
    failed_at: int | None = None,
    hostile: bool = False,
    codegen: bool = True,
    seed: int = 0,
    invocation: str | None = None,
    signature: str | None = None,
    script: str = "synthetic",
) -> Iterator[Event]:
    """Yield the events of an n-pass run (RunStarted, PassRecorded..., RunFinished) without TileLang.

    Passes come in three phases, every fifth nests two children under it, about
    a third change a line or two, `failed_at` makes that pass fail (and ends the
    run with an error), and the last two records are device and host codegen.
    `hostile` puts `</script>`, `<img onerror=...>`, quotes and odd Unicode in
    names and texts. Nothing is written to disk.
    """
    import random
    import time

    rng = random.Random(seed)
    script_dir = Path(script_dir)
    run_id = f"run_{time.strftime('%Y%m%d_%H%M%S')}_{seed:06d}_1_{uuid.uuid4().hex[:8]}"
    run_dir = script_dir / ".run_records" / run_id
    evil = '</script><script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">\'"&amp;\u202e\u2028\U0001f600'
    if hostile:
        kernel = f"k{evil}"
    body = [f'        buf_{i} = T.alloc_buffer((128,), "float32")  # line {i}' for i in range(lines)]
    if hostile:
        body[3] = f'        T.evaluate(T.call_extern("{evil}"))'
    head = _IR_TEMPLATE.format(kernel=kernel)
    manifest = cpu_manifest(
        run_id,
        script,
        kernel,
        invocation=invocation,
        signature=signature,
        input_hash=text_hash(head) if signature else None,
    )
    yield RunStarted(manifest, run_dir, script_dir)
    text = head + "\n".join(body) + "\n"
    phases = ["phase1", "phase2", "pipeline_c"]
    n_passes = max(0, n - 2) if codegen else n
    index = 0
    records: list[PassRecord] = []
    error = None
    parent: int | None = None
    children_left = 0
    for i in range(n_passes):
        phase = phases[min(2, i * 3 // max(1, n_passes))]
        name = f"Pass{i % 97}{'Lower' if i % 3 else 'Simplify'}"
        if hostile and i % 7 == 1:
            name = f"P{i}{evil}"
        depth = 1 if children_left else 0
        this_parent = parent if children_left else None
        if children_left:
            children_left -= 1
        elif i % 5 == 0:
            parent, children_left = index, 2
        before = text
        status = "noop"
        where = {"index": index, "name": name, "phase": phase, "depth": depth, "parent": this_parent}
        if i == failed_at:
            rec = PassRecord(
                **where,
                status=FAILED,
                duration_s=rng.random() / 100,
                error=f"TVMError: {evil if hostile else 'Check failed: (x) is false'} in {name}",
                before_hash=text_hash(before),
            )
            records.append(rec)
            yield PassRecorded(manifest, rec, before, before, run_dir)
            error = rec.error
            break
        if rng.random() < 0.35:
            lst = text.split("\n")
            k = rng.randrange(len(head.split("\n")), len(lst) - 1)
            choice = rng.random()
            if choice < 0.5:
                lst[k] = lst[k].replace("alloc_buffer", f"alloc_buffer_v{i}", 1) + f" /* {name} */"
            elif choice < 0.8:
                lst.insert(k, f"        T.evaluate({i})  # inserted by pass {i}")
            else:
                del lst[k]
            text = "\n".join(lst)
            status = "changed"
        bh = text_hash(before)
        ah = bh if text == before else text_hash(text)
        added = 0 if status == "noop" else 1
        rec = PassRecord(
            **where,
            status=status,
            added=added,
            removed=added,
            duration_s=round(rng.random() / 100, 6),
            before_hash=bh,
            after_hash=ah,
        )
        records.append(rec)
        yield PassRecorded(manifest, rec, before, text, run_dir)
        index += 1
    if codegen and error is None:
        for role in ("device", "host"):
            src = (
                f"// {role} source for {kernel}\n#include <math.h>\nvoid {role}_main(float* A) {{\n"
                + "".join(f"  A[{j}] = A[{j}] + 1.0f;\n" for j in range(lines // 2))
                + "}\n"
            )
            rec = PassRecord(
                index=index,
                name=f"Codegen[{role}]",
                phase="codegen",
                status="codegen",
                added=lines // 2 + 4,
                removed=len(text.splitlines()),
                role=role,
                ffi=f"target.build.tilelang_c{'_host' if role == 'host' else ''}",
                before_hash=text_hash(text),
                after_hash=text_hash(src),
                duration_s=round(rng.random() / 50, 6),
            )
            records.append(rec)
            yield PassRecorded(manifest, rec, text, src, run_dir)
            index += 1
    final = replace(
        manifest.with_records(records),
        finished=time.time(),
        status="error" if error else "complete",
        error=error,
    )
    yield RunFinished(final, run_dir, script_dir)


def write_synthetic_report(n: int, script_dir: Path, **kwargs: Any) -> Path:
    """Feed a synthetic n-pass run to a fresh listener; return the report's path."""
    listener = HtmlReportListener()
    run_dir = None
    for event in synthetic_events(n, script_dir, **kwargs):
        run_dir = getattr(event, "run_dir", run_dir)
        listener(event)
    listener.close()
    assert run_dir is not None
    return Path(run_dir) / REPORT_NAME
