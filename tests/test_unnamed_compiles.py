"""Compiles that carry no name of their own (`tilelang.lower`, `compile_only.compile_kernel_source`)
are named in the stream by their kernel, like other compiles, and every `tltrace show` command the
stream prints for them works (#48: they read `[?]`, and `show SCRIPT '?'` exited 2)."""

from __future__ import annotations

import re
import shlex

import pytest

from ._kernels import doubling

KERNEL = (
    """
import tilelang.language as T

"""
    + doubling("vec_twice", 128)
    + """

print("SYMBOL", vec_twice.attrs["global_symbol"], "SHAPE", vec_twice.buffer_map[vec_twice.params[0]].shape[0])
"""
)

CALLS = {
    "lower": (
        "import tilelang\nfrom tilelang import tvm\n\ntarget = tvm.target.Target('c')\n"
        "with target:\n    tilelang.lower(vec_twice, target=target)\n"
    ),
    "lower_sm90a": (  # the case: a compile-only CUDA lowering, no GPU needed
        "import tilelang\nfrom tilelang import tvm\n\ntarget = tvm.target.Target({'kind': 'cuda', 'arch': 'sm_90a'})\n"
        "with target:\n    tilelang.lower(vec_twice, target=target)\n"
    ),
    "compile_only": (
        "from tilelang.tools.compile_only import compile_kernel_source\n\ncompile_kernel_source(vec_twice)\n"
    ),
}


@pytest.mark.parametrize("how", sorted(CALLS))
def test_a_compile_with_no_name_is_labelled_by_its_kernel_and_its_hints_work(tmp_path, run_cli, how):
    script = tmp_path / f"unnamed_{how}.py"
    script.write_text(KERNEL + CALLS[how])
    r = run_cli("run", script, env={"COLUMNS": "300"})
    assert r.exit_code == 0, r.stdout + r.stderr
    # The oracle: TileLang's own PrimFunc, as the script printed it.
    symbol, shape = re.search(r"^SYMBOL (\S+) SHAPE (\d+)$", r.stdout, re.M).groups()
    stream = [x for x in r.stdout.splitlines() if x.startswith("[")]
    assert stream, r.stdout
    assert all(x.startswith(f"[{symbol} {shape}] ") for x in stream), r.stdout
    hints = sorted({m.split("  (", 1)[0] for m in re.findall(r"tltrace show .*$", r.stdout, re.M)})
    assert any("--pass" in h for h in hints) and any("--source-map" in h for h in hints), r.stdout
    for hint in hints:
        words = shlex.split(hint)
        assert words[:2] == ["tltrace", "show"]
        s = run_cli(*words[1:])
        assert s.exit_code == 0, (hint, s.stderr)
    # The name it is labelled by selects it, as a named compile's does (it said "no run of kernel").
    name = script.stem
    for args in (
        ("check", name, "--kernel", symbol, "--match", "codegen_device", f"CHECK: {symbol}"),
        ("show", name, "--kernel", symbol),
        ("show", name, "-1", "--kernel", symbol, "--facts"),
    ):
        s = run_cli(*args)
        assert s.exit_code == 0, (args, s.stdout, s.stderr)
    assert f"{symbol} {shape}" in run_cli("show", name, "--kernel", symbol).stdout
    s = run_cli("check", name, "--kernel", symbol + "_nope", "--match", "codegen_device", f"CHECK: {symbol}")
    assert s.exit_code == 7 and "no run of kernel" in s.stderr, (s.stdout, s.stderr)


def test_a_kernels_filter_that_cannot_apply_to_an_unnamed_compile_says_so(tmp_path, run_cli):
    """`run --kernels` decides before the first pass; a `tilelang.lower` compile has no name then and
    is traced. It was traced in silence, so `--kernels '^nomatch'` looked honoured (and `check` then
    passed on a kernel the filter should have left out). Now a warning names the kernel it did not
    match; one it matches is traced without a word."""
    script = tmp_path / "unnamed_filter.py"
    script.write_text(KERNEL + CALLS["lower"])
    r = run_cli("run", "--kernels", "^nomatch", script, env={"COLUMNS": "300"})
    assert r.exit_code == 0, r.stdout + r.stderr
    symbol = re.search(r"^SYMBOL (\S+) ", r.stdout, re.M).group(1)
    said = [x for x in (r.stdout + r.stderr).splitlines() if "--kernels '^nomatch'" in x]
    assert len(said) == 1 and f"does not match {symbol}, traced anyway" in said[0], r.stdout + r.stderr
    r = run_cli("run", "--kernels", f"^{symbol}$", script, env={"COLUMNS": "300"})
    assert r.exit_code == 0 and "--kernels" not in r.stdout + r.stderr, r.stdout + r.stderr
