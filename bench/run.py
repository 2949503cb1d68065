"""Run the benchmarks and write docs/benchmarks.md.

    python bench/run.py [--reps N] [--only capture,cost,lowering,report,autotune,align,overheads,children] [--configs 24] [--autotune-reps 3]

Each section measures tltrace against TileLang's built-in tracer on the same
work, in one run, as ratios; absolute times depend on the machine. With --only,
the sections not named are kept as they stand in the existing file. The GPU
sections (bench/results/*.md, measured on the GPU machine: bench/gpu.sh) are
pasted in as they are. A summary of every section's targets (its
`| target | limit | measured | verdict |` tables) heads the file.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import platform
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

# Section producers, in file order, and the heading each one's section starts with.
PRODUCERS = {
    "capture": "## Compile time and bytes on disk",
    "cost": "## Capture cost:",
    "lowering": "## CPU added to one sm_90a lowering",
    "report": "## HTML report",
    "autotune": "## Scale: autotune-shaped invocation (CPU",
    "align": "## Diff alignment",
    "overheads": "## Overheads: the pytest plugin when off",
    "children": "## Children: start-up of a child that never imports TileLang",
}
SUMMARY = "## Targets"
BUDGET_HEAD = "| target | limit | measured | verdict |"


def split_sections(text: str) -> list[str]:
    """Return the `## ` sections of a markdown file (the text before the first one is left out)."""
    parts = re.split(r"(?m)^(?=## )", text)
    return [p.rstrip("\n") + "\n" for p in parts if p.startswith("## ")]


def producer_of(section: str) -> str | None:
    for name, head in PRODUCERS.items():
        if section.startswith(head):
            return name
    return None


def budget_rows(section: str) -> list[str]:
    """The rows of every target table in a section."""
    rows: list[str] = []
    inside = False
    for line in section.splitlines():
        if line.startswith(BUDGET_HEAD):
            inside = True
            continue
        if inside and line.startswith("|---"):
            continue
        if inside and line.startswith("|"):
            rows.append(line)
        else:
            inside = False
    return rows


def summary(sections: list[str]) -> str:
    rows = [r for s in sections for r in budget_rows(s)]
    if not rows:
        return ""
    over = [r for r in rows if not re.search(r"\| \(?ok[;)]?[^|]*\|\s*$", r)]
    lines = [
        SUMMARY,
        "",
        f"Every target below is measured in the section it comes from; {len(rows) - len(over)} of "
        f"{len(rows)} met. Wall-time targets for 300-compile invocations are the H200's; CPU figures are "
        "shown in brackets for information.",
        "",
        BUDGET_HEAD,
        "|---|---:|---:|---|",
        *rows,
    ]
    return "\n".join(lines) + "\n"


def measure(name: str, a: argparse.Namespace) -> str:
    if name == "capture":
        import capture

        return capture.measure(a.reps)
    if name == "cost":
        import capture_cost

        return capture_cost.section(a.reps)
    if name == "lowering":
        import lowering_cpu

        return lowering_cpu.section(a.reps)
    if name == "report":
        import report

        return report.measure()
    if name == "autotune":
        import autotune

        return autotune.section(
            a.configs,
            a.autotune_reps,
            log=lambda s: print(s, file=sys.stderr, flush=True),
            save=HERE / "results" / "cpu_autotune.json",
        )[0]
    if name == "align":
        import align

        return align.section()
    if name == "overheads":
        import overheads

        return overheads.section()
    if name == "children":
        import children

        return children.section()
    raise ValueError(name)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=7, help="compiles per kernel and configuration (capture)")
    ap.add_argument("--configs", type=int, default=24, help="configs of the CPU autotune workload")
    ap.add_argument("--autotune-reps", type=int, default=3, help="invocations per configuration (autotune)")
    ap.add_argument(
        "--only",
        help="comma-separated sections to measure: "
        + ", ".join(PRODUCERS)
        + "; the others are kept from --out (none: only re-read bench/results)",
    )
    ap.add_argument("--out", type=Path, default=HERE.parent / "docs" / "benchmarks.md")
    ap.add_argument(
        "--results",
        type=Path,
        default=HERE / "results",
        help="sections measured on the GPU machine (*.md), pasted in as they are",
    )
    a = ap.parse_args(argv)

    wanted = list(PRODUCERS) if a.only is None else [s for s in a.only.split(",") if s and s != "results"]
    for w in wanted:
        if w not in PRODUCERS:
            ap.error(f"unknown section {w!r}; known: {', '.join(PRODUCERS)}, results")
    old = {producer_of(s): s for s in split_sections(a.out.read_text())} if a.out.exists() else {}
    sections = []
    for name in PRODUCERS:
        if name in wanted:
            sections.append(measure(name, a))
        elif name in old:
            sections.append(old[name])
    sections += [p.read_text().rstrip("\n") + "\n" for p in sorted(a.results.glob("*.md"))]
    if "autotune" not in wanted and (a.results / "cpu_autotune.json").exists():
        import autotune  # re-render the CPU section from its saved measurements (the table's code may have changed)

        res = autotune.Result.from_json(json.loads((a.results / "cpu_autotune.json").read_text()))
        sections = [autotune.render(res) if producer_of(s) == "autotune" else s for s in sections]
    head = (
        "# Benchmarks\n\n"
        f"Written by `python bench/run.py` on {_dt.date.today()} ({platform.machine()}, "
        f"{platform.python_version()}). Every table compares tltrace with TileLang "
        "0.1.15's built-in tracer (`TL_LOWER_TRACE`) on the same kernels in one run; "
        "read the ratios, not the absolute times (the machines are noisy).\n\n"
        "How to run: `python bench/run.py` (all CPU sections, about 20 minutes on 2 shared cores), or "
        "`--only autotune` (or `capture`, `cost`, `report`, `align`) to refresh some and keep the rest. GPU "
        "sections come from the H200: `. .device/env.sh && bash bench/gpu.sh PART` for PART in `check`, "
        "`autotune`, `builtin`, `proxy`, `cost` (one device call each, under 10 minutes, `.device` and "
        "`.upstream` carried; `CONFIGS=96 REPS=2` makes `autotune` the 96-config run), then "
        "`python bench/gpu.py summarize FOLDER > bench/results/gpu_autotune.md` here. `.upstream/` (ignored "
        "by git) holds copies of tile-ai/tilelang's `examples/gemm/example_gemm_autotune.py` (commit "
        "0985636), `examples/flash_attention/example_mha_fwd_bshd.py` (0973611) and "
        "`examples/deepseek_mla/example_mla_decode.py` (0985636), unmodified.\n\n"
    )
    a.out.parent.mkdir(parents=True, exist_ok=True)
    top = summary(sections)
    a.out.write_text(head + "\n".join(([top] if top else []) + sections))
    print(a.out.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
