"""The facts recorder: a run's facts when it ends, and its machine facts after it (docs/facts.md).

A recorder (session/recorder.py) registered by tracing/recorders.py. Its `ended` hook runs
once, on the printing worker, with the manifest about to be written when a compile ends:
the facts are read off the texts just stored, in a few milliseconds, never on the
compiling thread; they are the manifest's `facts` field. Only where something needs them
as the run ends (the live HTML report and index, `--ptxas`): otherwise the field stays
null and the first reader computes them from the same texts (facts.derived_facts, cached
beside the run in derived.json). With
`settings.ptxas` it also queues the nvcc build on the late worker (session/worker.py),
which rewrites the manifest with the machine facts seconds later; the compile has long
returned, and the invocation's end waits for it. Nothing here can fail a compile: a
failure is one notice per process and the manifest is written without (those) facts.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ..config import Settings
from ..format.layout import MANIFEST
from ..format.records import PassRecord, RunManifest
from ..session.recorder import Recorder
from ..session.store import RunStore
from ..session.worker import late_worker
from ..toolchain import nvcc
from ..toolchain.nvcc import say_once
from . import collect, ptxas
from .registry import CODEGEN_INPUT, DEVICE

Warn = Callable[[str], None]


def _reader(store: RunStore) -> collect.Read:
    """Read a record's text back from what this run just stored (its pack, by hash)."""

    def read(rec: PassRecord, side: str) -> str | None:
        digest = rec.after_hash if side == "after" else rec.before_hash
        return store.text(digest)

    return read


def with_facts(
    manifest: RunManifest,
    store: RunStore,
    want_ptxas: bool,
    warn: Warn,
    configs: dict[str, Any] | None = None,
) -> tuple[RunManifest, Callable[[], None] | None]:
    """Return `manifest` with its `facts` (worker side), and, when asked, the job that adds the
    machine facts (built with the pass `configs` TileLang's CUDA build reads, taken at the
    compile's codegen) once the run's manifest is written: the recorder queues it at `finish`."""
    try:
        read = _reader(store)
        facts = collect.compute(manifest, read, store.run_dir)
    except Exception as exc:  # facts are extra: the run is written without them
        say_once("facts", warn, f"facts not computed ({type(exc).__name__}: {exc}); the records are complete")
        return manifest, None
    out = replace(manifest, facts=facts)
    job = None
    if want_ptxas:
        chosen = collect.select(manifest)
        if DEVICE in chosen and CODEGEN_INPUT in facts["texts"]:
            rec, side = chosen[DEVICE]
            arch = facts["values"].get("arch")
            job = lambda: _machine(store, read(rec, side), arch, warn, configs)  # noqa: E731
    return out, job


def _machine(
    store: RunStore,
    source: str | None,
    arch: Any,
    warn: Warn,
    configs: dict[str, Any] | None = None,
) -> None:
    """Build the device source with ptxas's report and rewrite the run's manifest with the machine facts.

    Runs after the manifest is written (FactsRecorder.finish): it reads that manifest back, so
    every other recorder's field stays, and only `facts` changes.
    """
    if source is None:
        return
    try:
        report: dict[str, Any] | None = ptxas.machine_facts(
            source, arch if isinstance(arch, str) else None, configs=configs
        )
        machine: dict[str, Any] = {}
    except ptxas.Unavailable as exc:
        say_once("ptxas-unavailable", warn, f"--ptxas: {exc}; no machine facts")
        report, machine = None, {"unavailable": str(exc)}
    except Exception as exc:
        say_once("ptxas-error", warn, f"--ptxas: the nvcc build failed, no machine facts: {exc}")
        report, machine = None, {"error": str(exc)}
    try:
        path = store.run_dir / MANIFEST
        if not path.is_file():
            return
        manifest = RunManifest.from_json(json.loads(path.read_text(encoding="utf-8")))
        facts = dict(manifest.facts or {})
        if report is not None:
            facts["values"] = {**facts.get("values", {}), **report.pop("values")}
            machine = report
        facts["machine"] = machine
        store.write_manifest(replace(manifest, facts=facts))
    except Exception as exc:
        say_once("ptxas-write", warn, f"--ptxas: machine facts not written ({type(exc).__name__}: {exc})")


class FactsRecorder(Recorder):
    """The manifest's `facts`: computed on the worker when the run ends (`ended`)."""

    name = "facts"
    field = "facts"

    def __init__(self, want_ptxas: bool, live: bool = True) -> None:
        self.want_ptxas = want_ptxas
        # Facts are a pure function of the stored texts: computed here only for the live HTML
        # report and index, which show them as the run ends, or for --ptxas's build; else the
        # first reader computes them (facts.derived_facts) and caches them beside the run.
        self.live = live
        self.store: RunStore | None = None
        self.facts: dict[str, Any] | None = None
        self.configs: dict[str, Any] | None = None  # the build's pass configs (--ptxas only)
        self.machine: Callable[[], None] | None = None  # the machine facts' job, queued at finish

    def codegen(self, event: Any, call: Any) -> Any:
        # Compiling thread, --ptxas only: a few reads of the PassContext the compile runs under,
        # so that the nvcc build on the worker uses the flags TileLang's build would.
        if self.want_ptxas and self.configs is None and event.role != "host":
            self.configs = nvcc.configs_now()
        return None

    def attach(self, store: Any) -> None:
        self.store = store

    def ended(self, manifest: RunManifest) -> None:
        if self.store is None or not (self.live or self.want_ptxas):
            return
        out, self.machine = with_facts(manifest, self.store, self.want_ptxas, self.warn, self.configs)
        self.facts = out.facts

    def value(self) -> Any:
        return self.facts

    def finish(self) -> None:
        # The run's manifest is written: the slow nvcc build goes to the late worker, which no
        # compile waits for and the invocation's end drains (session/worker.py).
        if self.machine is not None:
            late_worker().submit(self.machine)
            self.machine = None


def make(settings: Settings) -> FactsRecorder:
    """The factory tracing/recorders.py registers: one recorder per compile."""
    return FactsRecorder(settings.ptxas, live=settings.html)
