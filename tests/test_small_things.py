"""#32 item 10: the small things (did-you-mean, usage lines, one-line errors, the lists' columns)."""

from __future__ import annotations

import pytest

from tltrace.ipython import tltrace_cell


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("--bogus", "unrecognized arguments: --bogus"),
        ("--mode", "argument --mode: expected one argument"),
        ("--mode x", "invalid choice: 'x'"),
        ("--trace-dir 'a", "No closing quotation"),
    ],
)
def test_a_bad_tltrace_magic_line_is_one_real_line(line, says, capsys):
    assert tltrace_cell(line, "raise AssertionError('the cell must not run')", None) is None
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1 and out[0].startswith("tltrace: error: %%tltrace: "), out
    assert says in out[0] and "usage: %%tltrace" in out[0]
