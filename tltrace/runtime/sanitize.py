"""`tltrace run --sanitize[=TOOL]`: the traced run underneath compute-sanitizer, its errors named and kept.

The CLI process runs `compute-sanitizer --tool TOOL --xml --save FILE` over `python -m tltrace run ARGS`
(ARGS: the same command line without --sanitize) through runtime/outer.py, the one way tltrace
runs itself under an outside tool (`run --ncu` too): a process group of its own, Ctrl+C and SIGTERM
taking the group down, and the run directories of the invocation the child traced. The user sees
compute-sanitizer's text and the script's output as they come. Then it reads FILE
(runtime/sanitizer_parse.py), names each group of errors at its compile's Python line
(runtime/sanitizer_lines.py) and keeps them in `sanitizer.json` of that compile's run directory,
compute-sanitizer's XML as `sanitizer.xml` in the invocation's newest one (format/sanitizer.py).

The child gets PYTORCH_NO_CUDA_MEMORY_CACHING=1 unless the user set it: torch's caching
allocator hands out pieces of large segments, and an access past a tensor's end that stays in
its segment is no error to compute-sanitizer (on the H100, an out-of-bounds store past a
4000-byte tensor was 0 errors with the cache on, one per thread with it off).

What follows the re-exec (`finish`) reads only files.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..format import sanitizer as records
from ..format.layout import SANITIZER_XML
from ..history import runs
from ..stages.sass import tool as find_cuda_tool
from . import outer
from .sanitizer_lines import Named, name_all
from .sanitizer_parse import Report, read_report

TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")
DEFAULT_TOOL = "memcheck"
NO_CACHING = "PYTORCH_NO_CUDA_MEMORY_CACHING"
EXE = "compute-sanitizer"


def find() -> str | None:
    """Return compute-sanitizer's path (PATH, beside nvcc, /usr/local/cuda/bin), None when there is none."""
    return find_cuda_tool(EXE)


def prefix(exe: str, tool: str, save: Path) -> list[str]:
    """compute-sanitizer's part of the command line: TOOL, its XML saved to `save`."""
    return [exe, "--tool", tool, "--xml", "--save", str(save)]


def command(exe: str, tool: str, save: Path, tltrace_args: Sequence[str]) -> list[str]:
    """The command line: compute-sanitizer over `python -m tltrace ARGS`, its XML saved to `save`."""
    return [*prefix(exe, tool, save), *_tltrace(tltrace_args)]


def _tltrace(tltrace_args: Sequence[str]) -> list[str]:
    return [sys.executable, "-m", "tltrace", *tltrace_args]


def environment(base: Mapping[str, str]) -> dict[str, str]:
    """The child's environment: `base` with torch's caching allocator off, unless the user set it."""
    env = dict(base)
    env.setdefault(NO_CACHING, "1")
    return env


def run(exe: str, tool: str, tltrace_args: Sequence[str], script_dir: Path) -> Outcome:
    """Run `tltrace ARGS` under compute-sanitizer and wait; return what it found (its exit status too).

    KeyboardInterrupt and proc.group.Terminated pass through once the group is down (runtime/outer.py).
    """
    try:
        script_dir.mkdir(parents=True, exist_ok=True)
    except OSError:
        pass
    save = script_dir / f".{SANITIZER_XML}.{os.getpid()}"
    done = outer.run_under(
        prefix(exe, tool, save), _tltrace(tltrace_args), script_dir, env=environment(os.environ)
    )
    try:
        return finish(tool, save, script_dir, done)
    except Exception as exc:  # a fault in reading never hides the script's exit status
        return Outcome(
            done.code, tool, Report(problem=f"its report could not be read ({type(exc).__name__}: {exc})")
        )


@dataclass
class Outcome:
    """What a sanitized run found and kept."""

    code: int  # compute-sanitizer's exit status (the script's, unless the tool failed)
    tool: str
    report: Report
    named: list[Named] = field(default_factory=list)
    kept: list[Path] = field(default_factory=list)  # the sanitizer.json files written
    xml: Path | None = None  # where compute-sanitizer's XML is now
    invocation: str | None = None


def finish(tool: str, save: Path, script_dir: Path, done: outer.Outcome) -> Outcome:
    """Read compute-sanitizer's report at `save`, name its errors in the compiles of the invocation the
    child traced (`done`, from runtime/outer.py), keep them."""
    report = read_report(save) if save.exists() else Report(problem="compute-sanitizer wrote no report")
    compiles = [r for r in (runs.load_run(p) for p in done.runs) if r.manifest is not None]
    out = Outcome(done.code, tool, report, name_all(report.groups(), compiles), invocation=done.invocation)
    if not compiles:  # nowhere to keep it but the script's directory (the last such report)
        out.xml = _moved(save, script_dir / SANITIZER_XML)
        return out
    home = compiles[-1]  # the errors that name no compile, and the XML, go in the newest one
    per_run: dict[Path, list[dict]] = {r.path: [] for r in compiles}
    for n in out.named:
        per_run[(n.run or home).path].append(n.to_json(tool))
    out.xml = _moved(save, home.path / SANITIZER_XML)
    for path, errors in per_run.items():
        if errors or path == home.path:
            rel = SANITIZER_XML if out.xml == home.path / SANITIZER_XML and path == home.path else None
            try:
                out.kept.append(records.write(path, tool, errors, rel, report.problem))
            except OSError:
                pass
    return out


def _moved(save: Path, dest: Path) -> Path | None:
    """Move compute-sanitizer's report to `dest`; return where it is now (None: it wrote none)."""
    if not save.exists():
        return None
    try:
        os.replace(save, dest)
        return dest
    except OSError:
        return save
