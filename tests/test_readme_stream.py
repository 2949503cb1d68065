"""README.md's stream sample is what `tltrace run examples/gemm.py --mode both` prints (issue #54).

Issue 54: the README's sample no longer matched the stream. It is now an excerpt of a real run
(tests/readme_stream.py, which `python tests/readme_stream.py` uses to rewrite it, or
TLTRACE_REGEN=1 here); this traces the example again and compares, times and dates masked.
"""

from __future__ import annotations

import os
from pathlib import Path

from tests import readme_stream as rs


def test_the_readme_stream_sample_is_a_real_run(tmp_path: Path) -> None:
    lines = rs.excerpt(rs.trace(tmp_path))
    readme = rs.README.read_text(encoding="utf-8")
    if os.environ.get("TLTRACE_REGEN"):
        rs.README.write_text(rs.rewrite(readme, lines), encoding="utf-8")
        readme = rs.README.read_text(encoding="utf-8")
    got = rs.comparable(rs.readme_sample(readme))
    assert got == rs.comparable(lines), (
        "README.md's stream sample differs from a real run; run: python tests/readme_stream.py"
    )
    # The sample keeps what a reader needs to see in it: a cut diff and its command, a tile-op
    # lowering, the generated source, the summary line with the report.
    text = "\n".join(lines)
    for want in ("CHANGED", "more lines: tltrace show gemm", "LowerTileOp", "CODEGEN", "done: ", "report: "):
        assert want in text, want
