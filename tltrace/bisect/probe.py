"""Which skip sets compile, asked of one long-lived child that recompiles the recorded kernel (_probe_child.py).

A step of `tltrace bisect` runs the whole script (about 4 s on the CPU, mostly importing
torch and TileLang) to learn, among other things, that a skip set does not compile. The
probe learns that in one process: it loads the recorded compile's input IR and PassContext
(`repro/` of a step-1 run) once, then compiles it once per question (0.1-2 s, no C build).
The bisector asks it before each step: a set that does not compile is untestable without
running the script. Its answers are hints: a set it says compiles may still fail in the
step (the C build), and the step says so. When the probe cannot start, or its compile with
nothing skipped does not reach the passes the recorded run reached, it says nothing.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Generic, TypeVar

from ..format.layout import MANIFEST
from ..proc import group as procgroup

R = TypeVar("R")


@dataclass(frozen=True)
class Answer:
    """Whether a skip set compiled in the probe, why not, and how long it took."""

    ok: bool
    why: str | None
    seconds: float
    code: str | None = None  # a hash of the generated code


def _same(a: str, b: str) -> bool:
    return a == b or a.rsplit(".", 1)[-1] == b.rsplit(".", 1)[-1] or a.split("@", 1)[0] == b.split("@", 1)[0]


def repro_file(run: Path, key: str) -> Path | None:
    """Return a run's reproducer file `key` ('frontend', 'context') as its manifest's `repro` names it.

    Runs before the manifest named them, or with a name that would leave the run directory:
    the old place, `repro/<key>.json`. None when the manifest names no such file.
    """
    try:
        man = json.loads((run / MANIFEST).read_text())
        files = man.get("repro") if isinstance(man, dict) else None
    except (OSError, ValueError):
        files = None
    rel = files.get(key) if isinstance(files, dict) else None
    if isinstance(rel, str) and rel and "/" not in rel and "\\" not in rel and rel not in (".", ".."):
        return run / rel
    if isinstance(rel, str) and rel == f"repro/{key}.json":
        return run / rel
    return None if isinstance(files, dict) else run / "repro" / f"{key}.json"


class Probe:
    """One probe child for the compiles of step 1; `ask(skip)` answers, or None when the probe is off."""

    def __init__(self, runs: list[Path], pipelines: list[list[str]], log: Path) -> None:
        self.asked: dict[tuple[tuple[int, ...], tuple[tuple[str, Any], ...]], Answer] = {}
        self.count = 0
        self.seconds = 0.0
        self.off: str | None = None
        self.proc: subprocess.Popen[str] | None = None
        ready = [r for r in runs if (f := repro_file(r, "frontend")) is not None and f.is_file()]
        if not runs or len(ready) != len(runs):
            self.off = "the recorded run has no saved input IR (repro_frontend.json)"
            return
        t0 = time.perf_counter()
        log.parent.mkdir(parents=True, exist_ok=True)
        self._log: IO[bytes] = open(log, "ab")
        try:
            self.proc = procgroup.start(
                [sys.executable, "-m", "tltrace.bisect._probe_child", *map(str, ready)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._log,
                text=True,
            )
            first = self._read()
        except OSError as exc:
            first = {"error": str(exc)}
        except BaseException:  # Ctrl+C, SIGTERM while it starts: the caller never gets it to close
            self.close()
            raise
        self.seconds += time.perf_counter() - t0
        if "error" in first or not isinstance(first.get("pipelines"), list):
            self.off = str(first.get("error") or "no answer")
            self.close()
            return
        got = first["pipelines"]
        for want, have in zip(pipelines, got):
            if len(want) > len(have) or not all(_same(a, b) for a, b in zip(want, have)):
                self.off = "its compile does not reach the passes of the recorded run"
                self.close()
                return

    def _read(self) -> dict:
        assert self.proc is not None and self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            return {"error": "the probe ended"}
        try:
            data = json.loads(line)
        except ValueError:
            return {"error": "not the probe's answer"}
        return data if isinstance(data, dict) else {"error": "not the probe's answer"}

    def ask(self, skip: tuple[int, ...], configs: dict[str, Any] | None = None) -> Answer | None:
        """Return whether every recorded compile compiles with `skip` (and `configs` set), cached; None when
        the probe is off."""
        key = (tuple(sorted(skip)), tuple(sorted((configs or {}).items())))
        if key in self.asked:
            return self.asked[key]
        if self.proc is None or self.proc.stdin is None:
            return None
        t0 = time.perf_counter()
        try:
            self.proc.stdin.write(json.dumps({"skip": list(key[0]), "configs": dict(key[1])}) + "\n")
            self.proc.stdin.flush()
            data = self._read()
        except OSError as exc:
            data = {"error": str(exc)}
        self.seconds += time.perf_counter() - t0
        if "error" in data or not isinstance(data.get("ok"), bool):
            self.off = str(data.get("error") or "no answer")
            self.close()
            return None
        self.count += 1
        why = data.get("why")
        code = data.get("code")
        a = Answer(
            data["ok"],
            why if isinstance(why, str) else None,
            float(data.get("seconds") or 0.0),
            code if isinstance(code, str) else None,
        )
        self.asked[key] = a
        return a

    def close(self) -> None:
        """End the probe: its stdin closed, 30 s to finish its compile, then its process group taken down."""
        if self.proc is not None:
            try:
                if self.proc.stdin is not None:
                    self.proc.stdin.close()
                self.proc.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                pass
            finally:
                procgroup.take_down(self.proc)
            self.proc = None
        log = getattr(self, "_log", None)
        if log is not None:
            log.close()
            self._log = None  # type: ignore[assignment]


class Probed(Generic[R]):
    """A bisection that may start a Probe: `run()` runs its `_run()` and closes the probe however it ends."""

    probe: Probe | None

    def run(self) -> R:
        # SIGINT, SIGTERM and SIGHUP raise here (KeyboardInterrupt, Terminated) while the
        # bisection runs: the step's process group and the probe's go down on the way out.
        with procgroup.on_signals():
            try:
                return self._run()
            finally:
                if self.probe is not None:
                    self.probe.close()

    def _run(self) -> R:
        raise NotImplementedError
