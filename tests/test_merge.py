"""diff3 merge: laws as properties, and the cases a person meets."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tltrace.reconcile.merge import merge3

line = st.sampled_from(["a\n", "b\n", "c\n", "d\n", "x\n", "{\n", "}\n", "tail"])
text = st.lists(line, max_size=8).map("".join)


@settings(max_examples=300)
@given(text, text)
def test_unchanged_side_takes_the_other(base, other):
    assert merge3(base, base, other).text == other
    assert merge3(base, other, base).text == other
    assert merge3(base, base, other).clean and merge3(base, other, base).clean


@settings(max_examples=300)
@given(text, text)
def test_same_change_on_both_sides(base, x):
    r = merge3(base, x, x)
    assert r.text == x and r.clean


@settings(max_examples=300)
@given(text, text, text)
def test_clean_merge_keeps_each_sides_lines(base, ours, theirs):
    r = merge3(base, ours, theirs)
    if r.clean:
        # a line added by only one side survives (multiset view)
        for side in (ours, theirs):
            for ln in set(side.splitlines()) - set(base.splitlines()):
                assert ln in r.text.splitlines()
    else:
        assert r.text.count("<<<<<<< ") == r.conflicts == r.text.count(">>>>>>> ")


BASE = "".join(f"line {i}\n" for i in range(10))


def test_disjoint_hunks_apply_cleanly():
    ours = BASE.replace("line 2\n", "line 2 edited\n")
    theirs = BASE.replace("line 7\n", "line 7 new\n") + "line 10\n"
    r = merge3(BASE, ours, theirs)
    assert r.clean
    assert (
        r.text
        == BASE.replace("line 2\n", "line 2 edited\n").replace("line 7\n", "line 7 new\n") + "line 10\n"
    )


def test_overlap_gets_markers():
    ours = BASE.replace("line 4\n", "mine\n")
    theirs = BASE.replace("line 4\n", "theirs\n")
    r = merge3(BASE, ours, theirs, ours_label="edit", theirs_label="codegen")
    assert r.conflicts == 1
    assert "line 3\n<<<<<<< edit\nmine\n=======\ntheirs\n>>>>>>> codegen\nline 5\n" in r.text


def test_base_section_and_missing_final_newline():
    r = merge3("a\nb", "a\nB", "a\nC", base_label="base")
    assert r.text == "a\n<<<<<<< ours\nB\n||||||| base\nb\n=======\nC\n>>>>>>> theirs\n"


def test_crlf_kept():
    base = "a\r\nb\r\nc\r\n"
    r = merge3(base, "A\r\nb\r\nc\r\n", "a\r\nb\r\nC\r\n")
    assert r.text == "A\r\nb\r\nC\r\n"
