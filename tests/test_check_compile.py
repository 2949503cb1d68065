"""tltrace check through the installed entry point on real compiles: a CPU (C) build, and compile-only CUDA builds.

CUDA codegen for sm_90a and sm_80 runs without a GPU (tilelang.lower). What the checks must
say is read from the generated source itself, never assumed of TileLang's pipelines.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

import tltrace

from ._cli import cli_env, cli_proc
from ._kernels import lowered
from ._records import EXAMPLES, require_tltrace_executable

CUDA = lowered("ARCH", stages=3)


def _env() -> dict[str, str]:
    return cli_env(NO_COLOR="1")


def tltrace_cli(*args: object, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    return cli_proc(*args, cwd=cwd, timeout=timeout, env=_env(), entry_point=True)


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    """One traced CPU compile (examples/elementwise_add.py) and compile-only sm_90a and sm_80 gemms, side by side."""
    require_tltrace_executable()
    work = tmp_path_factory.mktemp("check")
    procs = []
    for arch in ("sm_90a", "sm_80"):
        script = work / f"gemm_{arch}.py"
        script.write_text(CUDA.replace("ARCH", arch))
        procs.append((arch, _start(work, script)))
    procs.append(("cpu", _start(work, EXAMPLES / "elementwise_add.py")))
    said = {}
    for what, p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, f"{what}: {err[-2000:]}"
        said[what] = f"--- {what}: stdout\n{out[-1500:]}\n--- {what}: stderr\n{err[-3000:]}"
    for name in ("gemm_sm_90a", "gemm_sm_80", "elementwise_add"):  # each run traced into its own dir
        listing = sorted(str(q.relative_to(work)) for q in (work / "traces").glob("*/*"))
        assert (work / "traces" / name).is_dir(), f"{name} missing; traces: {listing}\n" + "\n".join(
            said.values()
        )
    return work


def _start(work: Path, script: Path) -> subprocess.Popen:
    exe = require_tltrace_executable()
    cmd = [exe, "run", "-q", "--trace-dir", "traces", str(script)]
    return subprocess.Popen(
        cmd, cwd=work, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _device(work: Path, script: str) -> str:
    c = tltrace.load(work / "traces" / script).compiles[-1]
    text = c.pass_("codegen_device").after
    assert text
    return text


def test_match_on_a_cpu_compile(work: Path) -> None:
    text = _device(work, "elementwise_add")
    lines = [ln.strip() for ln in text.split("\n") if ln.strip()]
    signature_line = next(ln for ln in lines if ln.startswith("int32_t") and ln.endswith("{"))
    res = tltrace_cli(
        "check", "--trace-dir", "traces", "elementwise_add",
        "--match", "codegen_device", f"CHECK: {signature_line}", "CHECK-NOT: __syncthreads", cwd=work,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr
    assert "all 1 checks passed" in res.stdout
    res = tltrace_cli(
        "check", "--trace-dir", "traces", "elementwise_add", "--match", "codegen_device",
        f"CHECK: {signature_line}", f"CHECK: {signature_line}", cwd=work,
    )  # fmt: skip
    assert res.returncode == 1, res.stdout + res.stderr
    assert "expected string not found" in res.stdout and res.stderr == ""


@pytest.mark.parametrize("arch", ["sm_90a", "sm_80"])
def test_wgmma_check_agrees_with_the_generated_cuda(work: Path, arch: str) -> None:
    text = _device(work, f"gemm_{arch}")
    want = 0 if ("tl::wgmma_ss" in text and "cp_async" not in text) else 1
    res = tltrace_cli(
        "check", "--trace-dir", "traces", f"gemm_{arch}", "--json",
        "--match", "codegen_device", "CHECK: tl::wgmma_ss", "CHECK-NOT: cp_async", cwd=work,
    )  # fmt: skip
    assert res.returncode == want, res.stdout + res.stderr
    (compile_,) = json.loads(res.stdout)["compiles"]
    (outcome,) = compile_["checks"]
    assert outcome["ok"] is (want == 0)
    if want:
        assert outcome["context"] and any(line.startswith(">") for line in outcome["context"])


def test_the_two_architectures_differ_on_the_check(work: Path) -> None:
    """The wgmma check passes on one build and fails on the other: both outcomes are exercised above."""
    results = set()
    for arch in ("sm_90a", "sm_80"):
        text = _device(work, f"gemm_{arch}")
        results.add("tl::wgmma_ss" in text and "cp_async" not in text)
    assert results == {True, False}


@pytest.mark.parametrize("arch", ["sm_90a", "sm_80"])
def test_expect_agrees_with_the_facts_read_back(work: Path, arch: str) -> None:
    c = tltrace.load(work / "traces" / f"gemm_{arch}").compiles[-1]
    wgmma, tma = c.facts["wgmma"], c.facts["tma_load"]
    assert isinstance(wgmma, int) and isinstance(tma, int)
    want = 0 if wgmma >= 1 and tma >= 1 else 1
    res = tltrace_cli(
        "check", "--trace-dir", "traces", f"gemm_{arch}", "--expect", "wgmma >= 1 and tma_load >= 1", cwd=work
    )
    assert res.returncode == want, res.stdout + res.stderr
    assert (f"wgmma = {wgmma}" in res.stdout) if want == 0 else ("is 0" in res.stdout)


def test_markdown_names_the_facts_that_changed_against_a_baseline(work: Path) -> None:
    a = tltrace.load(work / "traces" / "gemm_sm_80").compiles[-1].facts
    b = tltrace.load(work / "traces" / "gemm_sm_90a").compiles[-1].facts
    moved = [n for n in a if a[n] is not None and b[n] is not None and a[n] != b[n]]
    assert moved  # the two architectures differ in some fact (which ones is TileLang's business)
    res = tltrace_cli(
        "show", "--trace-dir", "traces", "gemm_sm_90a", "--format", "markdown", "--baseline", "gemm_sm_80:-1",
        cwd=work,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    section = res.stdout.split("### Facts changed against gemm\\_sm\\_80:-1", 1)[1].split("###", 1)[0]
    for name in moved:
        was, now = (_md(str(v).lower() if isinstance(v, bool) else str(v)) for v in (a[name], b[name]))
        assert f"| {_md(name)} | {was} | {now} |" in section, (name, section)


def _md(text: str) -> str:
    """Return text as a markdown cell shows it (cli/profile.py escapes underscores)."""
    return text.replace("_", "\\_")
