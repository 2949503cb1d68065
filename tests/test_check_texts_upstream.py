"""The truth check on a kernel issue 51's author may bring: the upstream FlashAttention forward,
lowered for sm_90a on the CPU under `--check-texts`, beside a second tool that prints inline.

Two oracles that are not tltrace's reading: the second instrumentation tool's own print of the
module at every pass callback (tests/test_capture_texts.py's `_InlinePrinter`), compared with
every record's before/after text; and `--check-texts`'s line per compile (its own inline print
on the compiling thread), which must say every text was equal. The kernel is the upstream
file's own (copied unmodified to tests/data/third_party/tilelang/, see its README; imported as it is: it
needs no GPU to import, only torch; $TLTRACE_UPSTREAM points at another checkout of it);
bench/check_texts.py runs the same check on MLA decode, the GEMM autotuner's configs and
examples/.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tltrace.session.events import Notice

from .test_capture_texts import _trace_with_printer, _wrong

pytestmark = pytest.mark.compile

REPO = Path(__file__).resolve().parent.parent
FLASH = (
    Path(os.environ["TLTRACE_UPSTREAM"]) / "examples/flash_attention/example_mha_fwd_bshd.py"
    if os.environ.get("TLTRACE_UPSTREAM")
    else REPO / "tests/data/third_party/tilelang/example_mha_fwd_bshd.py"
)
# `main`'s untuned kernel of the upstream file (and its causal twin): batch, heads, seq_len, dim.
ARGS = (8, 32, 4096, 128)
CONFIG = {"block_M": 128, "block_N": 128, "num_stages": 1, "threads": 128}

SCRIPT = f"""
import importlib.util

import tilelang
from tilelang import tvm

spec = importlib.util.spec_from_file_location("example_mha_fwd_bshd", {str(FLASH)!r})
upstream = importlib.util.module_from_spec(spec)
spec.loader.exec_module(upstream)
target = tvm.target.Target({{"kind": "cuda", "arch": "sm_90a"}})
for causal in (False, True):
    func = upstream.flashattn.jit_impl.get_tir(*{ARGS!r}, causal, **{CONFIG!r})
    with target:
        tilelang.lower(func, target=target)
"""


@pytest.fixture(scope="module")
def checked(tmp_path_factory) -> tuple[list, list, list[Notice]]:
    """The two FlashAttention lowerings traced with --check-texts beside the inline printer: (runs,
    the printer's compiles, the check's notices)."""
    if not FLASH.is_file():
        pytest.skip(f"no upstream FlashAttention at {FLASH} (set TLTRACE_UPSTREAM)")
    tmp = tmp_path_factory.mktemp("fa")
    script = tmp / "fa.py"
    script.write_text(SCRIPT)
    events: list = []
    runs, compiles = _trace_with_printer(script, tmp / "trace", "fa", check_texts=True, events=events)
    notices = [e for e in events if isinstance(e, Notice) and "inline print" in e.message]
    return runs, compiles, notices


def test_no_recorded_text_differs_from_an_inline_print_on_flash_attention_sm90a(checked) -> None:
    runs, compiles, notices = checked
    compared, wrong, what = _wrong(runs, compiles)
    assert len(runs) == 2
    for rows in compiles:  # lowered for sm_90a, as the printed modules' target says
        assert any('"arch": "sm_90a"' in (row[3] or "") for row in rows)
    assert wrong == 0, what
    assert len(notices) == len(runs), [n.message for n in notices]
    for (manifest, _), notice in zip(runs, notices):
        assert notice.kind == "info" and "all equal" in notice.message, notice.message
        n = int(notice.message.split()[0])
        assert n >= 2 * len(manifest.records) - 5  # (nearly) both sides of every pass were checked
        print(f"{manifest.signature}: {n} texts checked, 0 differed ({notice.message})")
    print(f"inline printer: {compared} records compared, {wrong} differed")


def test_bench_check_texts_reads_the_check_s_line_as_it_is_written(checked) -> None:
    """bench/check_texts.py adds up these lines from `tltrace run --check-texts`'s output: its pattern
    must read the line the check writes (texts checked, of them printed)."""
    import sys

    sys.path.insert(0, str(REPO / "bench"))
    import check_texts

    for notice in checked[2]:
        m = check_texts.CHECKED.search(notice.message)
        assert m is not None, notice.message
        assert int(m.group(1)) == int(notice.message.split()[0]) and 0 < int(m.group(2)) < int(m.group(1))
