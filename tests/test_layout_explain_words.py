"""The layout explanation's pure half: a conflict's message parsed (layouts/conflict.py), the words (explain.py).

The message is TileLang 0.1.15's own, copied from a real failure (tests/test_layout_explain.py
makes it); each parsed layout's thread of every element is checked against Python evaluating
the message's own `forward_thread` text.
"""

from __future__ import annotations

import pytest

from tltrace.layouts import conflict, explain, model

LOOP = (
    "_i // 32 * 64 + _j // 32 * 32 + _j % 8 * 4 + _i % 8 // 2",
    "_i % 32 // 8 * 8 + _i % 2 * 4 + _j % 32 // 8",
)
FRAG = (
    "_j // 32 * 64 + _i // 32 * 32 + _i % 8 * 4 + _j % 8 // 2",
    "_i % 32 // 16 * 16 + _j % 32 // 8 * 4 + _i % 16 // 8 * 2 + _j % 2",
)
MESSAGE = (
    "Layout infer conflict between C_l and D_l in T.Parallel loop:\n"
    f"    loop Fragment((64, 64) -> (32,), replicate: 1, thread: 128, forward_thread: {LOOP[0]}, "
    f"forward_index: ({LOOP[1]},), thread_range: I.Range(0, 128))\n"
    f"    fragment Fragment((64, 64) -> (32,), replicate: 1, thread: 128, forward_thread: {FRAG[0]}, "
    f"forward_index: ({FRAG[1]},), thread_range: I.Range(0, 128))"
)


def test_a_conflict_names_its_buffers_and_both_layouts() -> None:
    c = conflict.parse_conflict(MESSAGE)
    assert c is not None
    assert c["buffers"] == ["C_l", "D_l"] and c["where"] == "T.Parallel loop"
    assert [lay["label"] for lay in c["layouts"]] == ["loop", "fragment"]
    for lay, (thread, index) in zip(c["layouts"], (LOOP, FRAG)):
        e = lay["entry"]
        assert e["input_shape"] == [64, 64] and e["output_shape"] == [32]
        assert e["thread"] == thread and e["index"] == [index]
        assert e["thread_range"] == [0, 128] and e["replicate"] == 1
        e = dict(e, buffer="C_l", dtype="float32", scope="local.fragment", shape=[64, 64])
        for i, j in [(0, 0), (3, 17), (31, 63), (63, 1), (40, 40)]:
            want = eval(thread, {}, {"_i": i, "_j": j})  # the message's own text, Python's evaluator
            assert model.at(e, [i, j])["thread"] == [want]  # one replica


def test_get_different_layout_names_its_buffer() -> None:
    msg = MESSAGE.replace(
        "Layout infer conflict between C_l and D_l in T.Parallel loop:", "Get different layout for C_l"
    )
    c = conflict.parse_conflict(msg)
    assert c is not None and c["buffers"] == ["C_l"] and len(c["layouts"]) == 2


@pytest.mark.parametrize(
    "msg", ["Check failed: (has_best) is false: no available layout found", "", "Fragment((4,) -> (1,))"]
)
def test_other_messages_are_no_conflict(msg: str) -> None:
    assert conflict.parse_conflict(msg) is None


def _op(name, line, bufs, alone=None, tried=True):
    return {
        "name": name,
        "kind": name.split(".")[1].lower(),
        "line": line,
        "text_line": 20 + line,
        "buffers": [{"name": n, "shape": s, "scope": "local.fragment", "dtype": "float32"} for n, s in bufs],
        "alone_error": alone,
        "alone_tried": tried,
    }


def _data(ops, minimal, **kw):
    d = {
        "pass": "LayoutInference",
        "error": "Check failed: (has_best) is false: no available layout found",
        "threads": 128,
        "ops": ops,
        "minimal": minimal,
        "minimal_error": None,
        "minimal_complete": True,
        "complete": True,
        "conflict": None,
        "stopped": None,
    }
    d.update(kw)
    return d


def test_one_operation_has_no_layout() -> None:
    ops = [
        _op("T.copy", 11, [("f", [4, 96])]),
        _op("T.reduce_sum", 12, [("f", [4, 96]), ("s", [4])], alone="x"),
        _op("T.copy", 13, [("s", [4])]),
    ]
    assert explain.sentences(_data(ops, [1]))[0] == (
        "`T.reduce_sum` at line 12 over `f` (4, 96), `s` (4,) with 128 threads has no layout; "
        "`T.copy` at line 11 alone has one; `T.copy` at line 13 alone has one"
    )


def test_several_operations_cannot_agree() -> None:
    ops = [
        _op("T.copy", 10, [("a", [1, 229])]),
        _op("T.Parallel", 11, [("a", [1, 229])]),
        _op("T.copy", 13, [("a", [1, 229])]),
    ]
    lines = explain.sentences(_data(ops, [0, 1], minimal_complete=False))
    assert lines[0] == (
        "`T.copy` at line 10 and `T.Parallel` at line 11 over `a` (1, 229) with 128 threads cannot agree on a "
        "layout; each alone has one; `T.copy` at line 13 alone has one (not minimal: the search stopped early)"
    )


def test_no_explanation_says_why() -> None:
    assert explain.sentences(_data([], [], complete=False, stopped="the deadline (1 s) came first"))[0] == (
        "LayoutInference failed; no explanation (the deadline (1 s) came first)"
    )


def test_an_operation_that_lays_out_nothing_alone_is_said_so() -> None:
    left = "Check failed: layout_map.count(buffer) != 0 (0 vs. 0) : The layout for fragment s can not be inferred correctly."
    ops = [
        _op("T.copy", 11, [("f", [4, 96])]),
        _op("T.reduce_sum", 12, [("f", [4, 96]), ("s", [4])], alone=left),
        _op("T.copy", 13, [("s", [4])]),
    ]
    assert explain.sentences(_data(ops, [0, 1, 2]))[0] == (
        "`T.copy` at line 11, `T.reduce_sum` at line 12 and `T.copy` at line 13 over `f` (4, 96), `s` (4,) with "
        "128 threads cannot agree on a layout; `T.copy` at line 11 alone has one; `T.reduce_sum` at line 12 alone "
        "leaves `s` without one; `T.copy` at line 13 alone has one"
    )


def test_run_says_when_the_explanation_gave_no_answer(tmp_path, capsys) -> None:
    """A failed explanation (the rerun died, or explain raised) is said in one line, never silently dropped."""
    import threading

    from tltrace.cli.explain import RunExplainer

    ex = RunExplainer(5.0)
    for label, out in (
        ("k1", {"stopped": "the rerun gave no answer (exit 1): ImportError: x"}),
        ("k2", {"ops": [], "error": "E", "lines": ["k2's first line"]}),
    ):
        t = threading.Thread(target=lambda: None)
        t.start()
        t.join()
        ex._jobs.append((label, tmp_path, t, [out]))
    ex.finish()
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "[k1] why: not explained (the rerun gave no answer (exit 1): ImportError: x); `tltrace show` tries again",
        "[k2] why: k2's first line",
    ]
