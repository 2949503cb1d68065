"""README.md's stream sample, made from a real run: `python tests/readme_stream.py` rewrites it.

The sample is the first code block after README.md's paragraph that starts `**The stream.**`: an
excerpt of what `tltrace run examples/gemm.py --mode both` prints on the CPU, cut by a fixed rule
(`excerpt`): the first line, LowerTileOp's pass, and everything from the working file on; tltrace's lines only (TileLang's log lines and the script's own output fall
among them as the pipe's buffering goes). Paths are made relative to where it ran and run ids read `run_...`;
tests/test_readme_stream.py traces the example again and compares, times and dates masked.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
ANCHOR = "**The stream.**"  # the sample is the first code block after the paragraph that starts so
GAP = "..."  # lines of the stream the sample leaves out


def trace(home: Path) -> str:
    """Return what `tltrace run examples/gemm.py --mode both` prints, on the CPU, run in `home`."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("TL_LOWER_TRACE", "TL_LOWER_TRACE_DIR", "FORCE_COLOR")
    }
    env.update(TILELANG_DISABLE_CACHE="1", TLTRACE_EXAMPLES_CPU="1", NO_COLOR="1", COLUMNS="200")
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    (home / "examples").mkdir(exist_ok=True)
    for name in ("gemm.py", "_common.py"):
        (home / "examples" / name).write_text((REPO / "examples" / name).read_text())
    p = subprocess.run(
        [sys.executable, "-m", "tltrace", "run", "examples/gemm.py", "--mode", "both"],
        cwd=home,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=600,
    )
    if p.returncode != 0:
        raise RuntimeError(f"tltrace run failed ({p.returncode}):\n{p.stdout[-3000:]}")
    out = p.stdout.replace(str(home.resolve()) + os.sep, "").replace(str(home) + os.sep, "")
    return re.sub(r"\brun_\d{8}_\d{6}_\w+", "run_...", out)


def _blocks(lines: list[str]) -> list[list[str]]:
    """The stream in blocks: a line and the indented lines under it."""
    out: list[list[str]] = []
    for line in lines:
        if line.startswith("    ") and out:
            out[-1].append(line)
        else:
            out.append([line])
    return out


def excerpt(text: str) -> list[str]:
    """Return the sample: the first line, LowerTileOp's pass, and from the working file on."""
    # tltrace's own lines only: TileLang's log and the script's prints interleave with them as the
    # pipe's buffering falls, differently from run to run.
    blocks = [
        b
        for b in _blocks([line.rstrip() for line in text.rstrip("\n").split("\n")])
        if b[0].startswith(("[", "working files", "  "))
    ]
    lower = next(i for i, b in enumerate(blocks) if " LowerTileOp " in b[0])
    new = next(i for i, b in enumerate(blocks) if "working file" in b[0] and b[0].startswith("["))
    assert 0 < lower < new, (lower, new)
    picked = [blocks[0], [GAP], blocks[lower], [GAP], *blocks[new:]]
    return [line for b in picked for line in b]


def comparable(lines: list[str]) -> list[str]:
    """The lines with what differs between two runs masked: times, dates, sizes in KB."""
    out = []
    for line in lines:
        line = re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", "DATE", line)
        line = re.sub(r"\bin \d+(\.\d+)?\s?m?s\b", "in TIME", line)
        out.append(line)
    return out


def _fence(readme: str) -> tuple[int, int]:
    """The sample's code block in README: the first after the paragraph that starts `**The stream.**`."""
    lines = readme.split("\n")
    para = next(i for i, line in enumerate(lines) if line.startswith(ANCHOR))
    start = next(i for i in range(para, len(lines)) if lines[i] == "```")
    end = next(i for i in range(start + 1, len(lines)) if lines[i] == "```")
    return start, end


def readme_sample(readme: str) -> list[str]:
    """Return the lines of README's sample (inside its code fence)."""
    start, end = _fence(readme)
    return readme.split("\n")[start + 1 : end]


def rewrite(readme: str, lines: list[str]) -> str:
    start, end = _fence(readme)
    old = readme.split("\n")
    return "\n".join([*old[: start + 1], *lines, *old[end:]])


def main() -> int:
    with tempfile.TemporaryDirectory() as d:
        lines = excerpt(trace(Path(d)))
    README.write_text(rewrite(README.read_text(encoding="utf-8"), lines), encoding="utf-8")
    print(f"README.md: the stream sample, {len(lines)} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
