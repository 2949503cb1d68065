"""format/ids.py: one grammar for run and invocation ids, read by one parser everywhere."""

from __future__ import annotations

import datetime as dt

from tltrace.format import ids, layout
from tltrace.format.writer import pid_of_run_id

T = dt.datetime(2026, 3, 4, 5, 6, 7, 890123, tzinfo=dt.timezone.utc)


def test_made_ids_parse_back_to_their_time_and_pid() -> None:
    run, inv = ids.new_run_id(T), ids.new_invocation_id(T)
    assert run.startswith(ids.RUN_PREFIX) and inv.startswith(ids.INVOCATION_PREFIX)
    for made, prefix in ((run, "run"), (inv, "inv")):
        parts = ids.parse_id(made)
        assert parts is not None and parts.prefix == prefix and parts.utc
        assert (parts.date, parts.time, parts.micros) == ("20260304", "050607", 890123)
        assert ids.time_of_id(made) == T.timestamp()
        assert ids.id_time_is_absolute(made)
    assert ids.parse_id(run).pid == pid_of_run_id(run) and pid_of_run_id(run) is not None
    assert pid_of_run_id(inv) is None  # only a run id names its writer's pid
    assert ids.is_run_name(run) and not ids.is_run_name(inv)


def test_older_ids_still_read() -> None:
    local = "run_20240101_120000_123456_42_abcd"  # before the "Z": naive local time
    parts = ids.parse_id(local)
    assert parts is not None and not parts.utc and parts.pid == 42
    assert ids.time_of_id(local) == dt.datetime(2024, 1, 1, 12, 0, 0, 123456).timestamp()
    bare = "inv_20240101_120000"  # no microseconds, no pid
    assert ids.parse_id(bare) == ids.IdParts("inv", "20240101", "120000", None, False, None)
    assert ids.time_of_id(bare) == dt.datetime(2024, 1, 1, 12).timestamp()
    assert pid_of_run_id("run_20240101_120000_42_x") is None  # a pid is read only after microseconds


def test_what_is_not_an_id() -> None:
    for text in ("", "run_", "latest", "run_2024_01", "RUN_20240101_120000", "run_20241399_250000Z_1_x"):
        assert ids.time_of_id(text) is None, text
    for text in ("", "run_", "latest", "run_2024_01", "RUN_20240101_120000"):
        assert ids.parse_id(text) is None and not ids.id_time_is_absolute(text), text


def test_stored_text_names() -> None:
    h = layout.text_hash("x")
    assert layout.is_object_name(h) and layout.is_hash(h) and not layout.is_object_name(h[:8])
    assert layout.is_object_temp(f".{h}.123-456.tmp") and not layout.is_object_temp(h)
    assert layout.source_hash(layout.source_file(h)) == h and layout.source_hash("../x.py") is None


def test_no_module_splits_an_id_by_hand() -> None:
    """docs/architecture.md: every id is read by one parser, `format/ids.parse_id` (no `name.split("_")`)."""
    import ast
    from pathlib import Path

    pkg = Path(ids.__file__).resolve().parent.parent
    for path in pkg.rglob("*.py"):
        rel = path.relative_to(pkg).as_posix()
        if rel == "format/ids.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("split", "rsplit", "partition", "rpartition")
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and node.args[0].value == "_"
            ):
                raise AssertionError(
                    f"tltrace/{rel}:{node.lineno} splits on '_' by hand: use format/ids.parse_id"
                )
