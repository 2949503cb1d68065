"""`bisect --configs` says what each flip did: the facts its step's compile changed against step 1's, on
the step's own line, in the summary and in --json.

A warp-specialized sm_90a gemm lowered on the CPU (no GPU): `tl.disable_warp_specialized` turns the
TMA producer/consumer kernel (a static `__shared__ uint64_t mbarrier_mem[6]`, TMA loads) into a
cp.async one without them. The oracle is each step's generated CUDA source, read here from its
run's files: the static shared memory its `__shared__` declarations hold, its `tl::tma_load(`
calls, not tltrace's facts.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ._kernels import gemm_script
from ._records import pack_texts

REPO = Path(__file__).resolve().parent.parent

GEMM = gemm_script(
    "A warp-specialized gemm lowered for sm_90a on the CPU: right when it lowers.",
    """

target = tvm.target.Target({"kind": "cuda", "arch": "sm_90a"})
with target:
    tilelang.lower(make(stages=3), target=target)
""",
)

FLIPS = "^tl\\.(disable_warp_specialized|disable_tma_lower)$"
_BYTES = {"uint64_t": 8, "int64_t": 8, "double": 8, "float": 4, "int": 4, "uint": 4, "half_t": 2, "uchar": 1}
_STATIC = re.compile(r"^\s*__shared__\s+(?:__align__\(\d+\)\s+)?(\w+)\s+\w+\[(\d+)\];", re.M)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TL_LOWER_TRACE", "TL_LOWER_TRACE_DIR")}
    env["TILELANG_DISABLE_CACHE"] = "1"
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    return env


@pytest.fixture(scope="module")
def bisected(tmp_path_factory) -> tuple[subprocess.CompletedProcess, dict]:
    home = tmp_path_factory.mktemp("bisect_facts")
    (home / "gemm.py").write_text(GEMM)
    cmd = [
        sys.executable,
        "-m",
        "tltrace",
        "bisect",
        "--configs",
        "--configs-matching",
        FLIPS,
        "--json",
        "gemm.py",
    ]
    p = subprocess.run(cmd, cwd=home, env=_env(), capture_output=True, text=True, timeout=900)
    assert p.returncode == 1, p.stdout[-2000:] + p.stderr[-2000:]  # right with every flip: none turns it
    return p, json.loads(p.stdout)


def _device_source(run: str) -> str:
    """The generated CUDA source of a step's compile, read from the file its manifest names."""
    d = Path(run)
    records = json.loads((d / "manifest.json").read_text())["records"]
    device = [r for r in records if r.get("role") == "device" and r.get("after_file")]
    return pack_texts(d)[device[-1]["after_hash"]]  # the run's pack, read by its documented layout


def _static_smem(cuda: str) -> int:
    """Bytes of the static __shared__ arrays the source declares (extern, dynamic, ones left out)."""
    return sum(_BYTES[t] * int(n) for t, n in _STATIC.findall(cuda))


def test_each_flip_says_the_facts_it_changed_on_its_step(bisected) -> None:
    p, data = bisected
    steps = {s["number"]: s for s in data["steps"]}
    base = _device_source(steps[1]["runs"][0])
    ws = next(s for s in data["steps"] if s["configs"] == {"tl.disable_warp_specialized": True})
    flipped = _device_source(ws["runs"][0])
    a, b = _static_smem(base), _static_smem(flipped)
    ta, tb = base.count("tl::tma_load("), flipped.count("tl::tma_load(")
    assert a > b and ta > tb == 0, (a, b, ta, tb)  # the flip changes shared memory and drops TMA
    want = {"smem_static": (a, b), "tma_load": (ta, tb)}
    (diff,) = ws["facts"]  # one compile
    got = {c["name"]: (c["a"], c["b"]) for c in diff["changes"]}
    assert {k: got.get(k) for k in want} == want, got
    assert diff["run"] == ws["runs"][0] and diff["base_run"] == steps[1]["runs"][0]
    assert data["flips"]["tl.disable_warp_specialized"]["facts"] == ws["facts"]
    # The step's own progress line names the flip and what it changed.
    (line,) = [x for x in p.stderr.splitlines() if f"step {ws['number']} [" in x]
    assert "flip tl.disable_warp_specialized=True" in line
    assert f"smem_static {a} \u2192 {b}" in line and f"tma_load {ta} \u2192 {tb}" in line
    assert steps[1]["facts"] is None and "facts:" not in next(
        x for x in p.stderr.splitlines() if "step 1 [" in x
    )
    # A flip whose compile made the same device source changed no fact read from it.
    for s in data["steps"][1:]:
        if _device_source(s["runs"][0]) == base:
            changed = {c["name"] for c in s["facts"][0]["changes"]}
            assert not changed & {"smem_static", "tma_load", "wgmma", "cp_async", "syncthreads"}, s


def test_the_summary_names_each_flips_facts(bisected, capsys) -> None:
    """Without --json: each flip alone, its outcome, and the facts it changed, on its own line."""
    from tltrace.bisect.configs import NONE, ConfigResult
    from tltrace.cli.bisect import _print_configs

    _, data = bisected
    flips = data["flips"]
    result = ConfigResult(
        NONE,
        data["recorded"],
        [],
        flips={k: v["outcome"] for k, v in flips.items()},
        values={k: v["value"] for k, v in flips.items()},
        facts={k: v["facts"] for k, v in flips.items()},
    )
    _print_configs(result)
    out = capsys.readouterr().out
    steps = {s["number"]: s for s in data["steps"]}
    ws = next(s for s in data["steps"] if s["configs"] == {"tl.disable_warp_specialized": True})
    a, b = (_static_smem(_device_source(s["runs"][0])) for s in (steps[1], ws))
    (line,) = [x for x in out.splitlines() if x.startswith("  tl.disable_warp_specialized=True: ")]
    assert f"smem_static {a} \u2192 {b}" in line, out
    for name, f in flips.items():  # every flip has its line, with its facts or 'no fact changed'
        (mine,) = [x for x in out.splitlines() if x.startswith(f"  {name}={f['value']}: {f['outcome']}  (")]
        assert ("no fact changed" in mine) == (not f["facts"][0]["changes"]), mine
