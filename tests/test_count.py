"""`show --count PATTERN` and `diff-runs --count`: where a count changes, on a pipelined gemm lowered for
CUDA on the CPU (sm_80: cp.async and __syncthreads; sm_90a: TMA and mbarriers).

The oracle is each recorded text, read here from the run's files (manifest.json and the per-pass
files it names, opened directly), counted with str.count or re.findall: not tltrace's reader or
its counting code. Pass names and numbers come from the manifest, never written here.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tltrace.errors import EXIT_USAGE

from ._kernels import gemm_script
from ._records import pack_texts

REPO = Path(__file__).resolve().parent.parent

GEMM = gemm_script(
    "A pipelined GEMM lowered for CUDA on the CPU (no GPU): one compile per arch in argv.",
    """

for arch in sys.argv[1:]:
    target = tvm.target.Target({"kind": "cuda", "arch": arch})
    with target:
        tilelang.lower(make(stages=3), target=target)
""",
)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TL_LOWER_TRACE", "TL_LOWER_TRACE_DIR")}
    env["TILELANG_DISABLE_CACHE"] = "1"
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    return env


def _tltrace(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tltrace", *args], cwd=cwd, env=_env(), capture_output=True, text=True
    )


@pytest.fixture(scope="module")
def traced(tmp_path_factory) -> dict[str, Path]:
    """The run directories of one traced invocation: the gemm lowered for sm_80, then for sm_90a."""
    home = tmp_path_factory.mktemp("count")
    (home / "gemm.py").write_text(GEMM)
    # --ptx --sass: the PTX and SASS stages where nvcc is installed (none without it: no stage rows)
    p = _tltrace(
        "run", "-q", "--no-codegen-output", "--ptx", "--sass", "gemm.py", "sm_80", "sm_90a", cwd=home
    )
    assert p.returncode == 0, p.stderr[-3000:]
    root = home / "tmp" / "lower_trace_dir" / "gemm" / ".run_records"
    dirs = [d for d in root.iterdir() if (d / "manifest.json").is_file()]
    by_start = sorted(dirs, key=lambda d: json.loads((d / "manifest.json").read_text())["started"])
    assert len(by_start) == 2
    return {"sm_80": by_start[0], "sm_90a": by_start[1], "home": home}


def _texts(run: Path) -> list[tuple[dict, str | None, str | None]]:
    """Every record of a run with its before and after texts, read from the files the manifest names."""
    out = []
    packed = pack_texts(run)  # read here by the pack's documented layout, not by tltrace
    for rec in json.loads((run / "manifest.json").read_text())["records"]:

        def read(side: str, rec: dict = rec) -> str | None:
            digest = rec.get(f"{side}_hash")
            if digest in packed:
                return packed[digest]
            rel = rec.get(f"{side}_file")
            if rel and (run / rel).is_file():
                return (run / rel).read_text(errors="replace")
            obj = run.parent / ".objects" / str(digest)
            return obj.read_text(errors="replace") if digest and obj.is_file() else None

        out.append((rec, read("before"), read("after")))
    return out


def _syncs(text: str | None, language: str) -> int | None:
    """__syncthreads in a text, as each language spells it (counted as plain strings)."""
    if text is None:
        return None
    if language == "tir":
        return text.count('T.tvm_storage_sync("shared")') + text.count('T.tvm_storage_sync("shared.dyn")')
    return text.count("__syncthreads()")


def _show(traced, run: Path, *args: str) -> subprocess.CompletedProcess:
    return _tltrace("show", str(run), *args, cwd=traced["home"])


def test_a_regex_counted_in_every_recorded_text(traced) -> None:
    """`--count REGEX --json`: before and after of every record equal re.findall on its texts."""
    regex = r"tvm_storage_sync|__syncthreads|T\.ptx_cp_async\("
    for arch in ("sm_80", "sm_90a"):
        p = _show(traced, traced[arch], "--count", regex, "--json")
        assert p.returncode == 0, p.stderr
        data = json.loads(p.stdout)
        texts = _texts(traced[arch])
        want = [
            (
                r["index"],
                len(re.findall(regex, b)) if b is not None else None,
                len(re.findall(regex, a)) if a is not None else None,
            )
            for r, b, a in texts
        ]
        assert [(r["index"], r["before"], r["after"]) for r in data["passes"]] == want, arch
        changed = [i for i, b, a in want if b is not None and a is not None and b != a]
        assert [r["index"] for r in data["changes"]] == changed and changed, arch


def test_the_pass_where_the_barriers_appear(traced) -> None:
    """`--count T.sync_threads` on the sm_80 gemm: the passes that change the barrier count, each named
    `#N NAME a → b`, are the records whose texts hold a different number of barriers before and after
    (TIR's T.tvm_storage_sync("shared"), the CUDA source's __syncthreads()); the first is where they
    appear. Each printed #N, fed back to `--pass N` and `--pass '#N'`, selects that same pass."""
    run = traced["sm_80"]
    texts = _texts(run)
    oracle = []
    stages = {r["index"] for r, _, _ in texts if r.get("role") in ("ptx", "sass")}  # their own test
    for rec, before, after in texts:
        if rec["index"] in stages:
            continue
        lang_after = "source" if rec.get("role") in ("device", "host") else "tir"
        b, a = _syncs(before, "tir"), _syncs(after, lang_after)
        if b is not None and a is not None and b != a:
            oracle.append((rec["index"], rec["name"], b, a))
    appear = next(o for o in oracle if o[2] == 0 and o[3] > 0)  # barriers come from nowhere here
    p = _show(traced, run, "--count", "T.sync_threads")
    assert p.returncode == 0, p.stderr
    lines = re.findall(r"^  #(\d+) (\S+) (.*)$", p.stdout.split("changed in ", 1)[1], re.M)
    printed = [
        (i, n, *re.fullmatch(r"(\d+) \u2192 (\d+)", rest).groups())
        for i, n, rest in lines
        if int(i) not in stages
    ]
    assert [(int(i), n, int(b), int(a)) for i, n, b, a in printed] == oracle
    assert appear in oracle
    # The device source's count, the last text: what the table's last codegen row says.
    device = [(r, a) for r, _, a in texts if r.get("role") == "device"][-1]
    row = re.search(rf"^\s*{device[0]['index']}\s+\S+\s+codegen_device\s+(\d+)", p.stdout, re.M)
    assert row is not None and int(row.group(1)) == _syncs(device[1], "source") > 0
    for i, name, _, _ in printed:  # one numbering: the number printed is what --pass takes
        for ref in (i, f"#{i}"):
            q = _show(traced, run, "--pass", ref, "--json")
            assert q.returncode == 0, q.stderr
            got = json.loads(q.stdout)["record"]
            assert (got["index"], got["name"]) == (int(i), name)


def test_a_known_operation_is_counted_as_each_stage_spells_it(traced) -> None:
    """`--count tl.tma_load` on the sm_90a gemm: T.tma_load( in TIR, tl::tma_load( in the CUDA source."""
    run = traced["sm_90a"]
    p = _show(traced, run, "--count", "tl.tma_load", "--json")
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert data["pattern"]["known"] == "tl.tma_load"
    by_index = {r["index"]: r for r in data["passes"]}
    for rec, before, after in _texts(run):
        if rec.get("role") in ("ptx", "sass"):
            continue  # the stages: test_the_ptx_and_sass_stages_are_counted_in_their_own_language
        device = rec.get("role") == "device"
        row = by_index[rec["index"]]
        assert row["before"] == before.count("T.tma_load("), rec["name"]
        want = after.count("tl::tma_load(") if device else after.count("T.tma_load(")
        assert row["after"] == want and (row["after_language"] == "source") == device, rec["name"]
    device = [r for r, _, _ in _texts(run) if r.get("role") == "device"][-1]
    assert data["changes"] and by_index[device["index"]]["after"] > 0  # the device source has its loads


def test_the_ptx_and_sass_stages_are_counted_in_their_own_language(traced) -> None:
    """`--count T.sync_threads` on the stages (run --ptx --sass): the PTX stage reads the CUDA source and
    gives PTX (`bar.sync 0` / `barrier.sync 0` instructions), the SASS stage reads PTX and gives SASS
    (`BAR.SYNC`), each counted here line by line."""
    run = traced["sm_80"]
    stages = {r.get("role"): (r, b, a) for r, b, a in _texts(run) if r.get("role") in ("ptx", "sass")}
    if not stages:
        pytest.skip("no nvcc: the compile has no PTX or SASS stage")
    data = json.loads(_show(traced, run, "--count", "T.sync_threads", "--json").stdout)
    by_index = {r["index"]: r for r in data["passes"]}

    def ptx_bars(text: str) -> int:
        return sum(1 for x in text.splitlines() if re.match(r"\s*(bar|barrier)\.sync(\.aligned)?\s+0\s*;", x))

    rec, before, after = stages["ptx"]
    row = by_index[rec["index"]]
    assert (row["before_language"], row["after_language"]) == ("source", "ptx")
    assert (row["before"], row["after"]) == (before.count("__syncthreads()"), ptx_bars(after))
    if "sass" in stages:
        rec, before, after = stages["sass"]
        row = by_index[rec["index"]]
        assert (row["before_language"], row["after_language"]) == ("ptx", "sass")
        sass_bars = sum(1 for x in after.splitlines() if "BAR.SYNC" in x)
        assert (row["before"], row["after"]) == (ptx_bars(before), sass_bars) and sass_bars > 0


def test_diff_runs_counts_side_by_side(traced) -> None:
    """`diff-runs A B --count`: per aligned pass, A's and B's counts after it, as the texts hold them."""
    a, b = traced["sm_80"], traced["sm_90a"]
    regex = r"__syncthreads|tvm_storage_sync"
    p = _tltrace("diff-runs", str(a), str(b), "--count", regex, "--json", cwd=traced["home"])
    data = json.loads(p.stdout)
    after = {
        side: {r["index"]: len(re.findall(regex, t)) for r, _, t in _texts(run) if t is not None}
        for side, run in (("a", a), ("b", b))
    }
    rows = data["passes"]
    assert rows and all(
        r[side] == (after[side][r[f"{side}_index"]] if r[f"{side}_index"] is not None else None)
        for r in rows
        for side in ("a", "b")
    )
    differ = [r for r in rows if r["a"] != r["b"]]
    assert [r for r in rows if r["differs"]] == differ
    assert p.returncode == (1 if differ else 0)
    text = _tltrace("diff-runs", str(a), str(b), "--count", regex, cwd=traced["home"])
    assert text.returncode == p.returncode
    for side, run in (("A", a), ("B", b)):  # each side's changes, named as --pass takes them
        line = next(x for x in text.stdout.splitlines() if x.startswith(f"{side} changed it in: "))
        named = re.findall(r"#(\d+) (\S+) \d+ \u2192 \d+", line)
        recs = {r["index"]: r["name"] for r, _, _ in _texts(run)}
        assert named and all(recs[int(i)] == n for i, n in named)


@pytest.mark.parametrize("command", ["show", "diff-runs"])
def test_a_bad_regex_is_one_line(traced, command: str) -> None:
    """A pattern that is not a regex, or matches the empty string: one line on stderr, exit 2 (usage)."""
    runs = [str(traced["sm_80"])] if command == "show" else [str(traced["sm_80"]), str(traced["sm_90a"])]
    for bad in ("T.tma_load(", "a|"):
        p = _tltrace(command, *runs, "--count", bad, cwd=traced["home"])
        assert p.returncode == EXIT_USAGE, (bad, p.stdout, p.stderr)
        assert p.stderr.startswith("tltrace: error: --count") and p.stderr.count("\n") == 1, p.stderr
        assert p.stdout == "" and "Traceback" not in p.stderr
