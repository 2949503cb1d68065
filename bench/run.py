"""Run every benchmark in one go and write docs/benchmarks.md.

    python bench/run.py [--reps N]

Each section measures tltrace against TileLang's built-in tracer on the same
work, in one run, as ratios; absolute times depend on the machine.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import platform
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--out", type=Path, default=HERE.parent / "docs" / "benchmarks.md")
    ap.add_argument("--gpu-section", type=Path, default=HERE / "results" / "gpu.md",
                    help="a section measured on the GPU machine, pasted in as it is")
    a = ap.parse_args()

    import capture
    import diff
    import report

    sections = [capture.measure(a.reps), report.measure(), diff.measure()]
    if a.gpu_section.exists():
        sections.append(a.gpu_section.read_text())
    head = (
        "# Benchmarks\n\n"
        f"Written by `python bench/run.py` on {_dt.date.today()} ({platform.machine()}, "
        f"{platform.python_version()}). Every table compares tltrace with TileLang "
        "0.1.15's built-in tracer (`TL_LOWER_TRACE`) on the same kernels in one run; "
        "read the ratios, not the absolute times (the machines are noisy).\n\n"
    )
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(head + "\n".join(sections))
    print(a.out.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
