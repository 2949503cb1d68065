"""A bundle (or repro) whose IR does not load on the installed TileLang: one line, exit 5.

tests/data/bundle_0.1.15_add.zip is examples/elementwise_add.py (CPU) recorded on
TileLang 0.1.15 (remake it there: `tltrace run -q --trace-dir tr examples/elementwise_add.py
&& tltrace bundle --trace-dir tr elementwise_add -o tests/data/bundle_0.1.15_add.zip --force`).
Its frontend IR uses an operator 0.1.14 lacks: on 0.1.14 (CI's floors venv) replay names
it and both releases and exits 5; on the release it was recorded on it replays the same.
A bundle edited to name an operator no release has checks the same line on any release.
"""

from __future__ import annotations

import json
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parent / "data" / "bundle_0.1.15_add.zip"


def _recorded(bundle: Path) -> str:
    with zipfile.ZipFile(bundle) as zf:
        return json.loads(zf.read("bundle.json"))["tilelang"]


@pytest.mark.floors
def test_a_bundle_from_another_release_is_replayed_or_refused_in_one_line(run_cli) -> None:
    recorded, here = _recorded(DATA), metadata.version("tilelang")
    res = run_cli("replay", str(DATA))
    lines = res.stdout.strip().splitlines()
    if recorded == here:
        assert res.exit_code == 0, res.output
        assert len(lines) == 1 and ": same:" in lines[0]
        return
    assert lines[0] == (
        f"recorded with TileLang {recorded}, replaying on TileLang {here}: a comparison, not a reproduction"
    )
    if res.exit_code == 5:  # the IR does not load here
        assert len(lines) == 2, res.output
        assert "not replayable here" in lines[1] and f"TileLang {here} does not have" in lines[1]
        assert "operator tl." in lines[1] and f"use TileLang {recorded}" in lines[1]
    else:  # it loads here: a comparison, the first divergent pass named
        assert res.exit_code in (0, 1), res.output
        assert res.exit_code == 0 or "first divergence" in res.stdout


def _with_unknown_op(src: Path, dest: Path, op: str) -> None:
    """Copy a bundle, renaming the first operator its frontend IR uses to `op`."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as zout:
        zout.comment = zin.comment
        for info in zin.infolist():
            data = zin.read(info)
            if info.filename.endswith("/frontend.json"):
                graph = json.loads(data)
                node = next(n for n in graph["nodes"] if "ir.Op" in (n.get("type"), n.get("type_key")))
                node["data" if "data" in node else "repr_str"] = op
                data = json.dumps(graph).encode()
            zout.writestr(info, data)


def test_an_operator_this_release_lacks_is_named_in_one_line(run_cli, tmp_path: Path) -> None:
    op = "tl.op_of_a_later_release"
    bundle = tmp_path / "later.zip"
    _with_unknown_op(DATA, bundle, op)
    res = run_cli("replay", str(bundle))
    assert res.exit_code == 5, res.output
    here = metadata.version("tilelang")
    (line,) = [ln for ln in res.stdout.splitlines() if "not replayable" in ln]
    assert f"operator {op}, which TileLang {here} does not have" in line
    assert "Traceback" not in res.output
