"""The report's one escaper of embedded data (render/safejson.py): whatever the text, the JSON it writes
parses back to the same value (Python's json, as JSON.parse would) and holds none of the characters
that could end a <script> element, open a comment or put a control character in the page. Both
paths are driven: ASCII-only data (IR) and data with other characters."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from tltrace.render.safejson import script_json

_FORBIDDEN = {"<", ">", "&", "\x7f", "\u2028", "\u2029", *map(chr, range(0x80, 0xA0)), *map(chr, range(0x20))}
_ASCII = st.text(alphabet=st.characters(max_codepoint=0x7F), max_size=200)
_ANY = st.text(max_size=200)


def _check(value: object) -> None:
    out = script_json(value)
    assert json.loads(out) == value
    assert not _FORBIDDEN & set(out), sorted(_FORBIDDEN & set(out))


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(_ASCII, st.one_of(_ASCII, st.lists(_ASCII, max_size=4)), max_size=5))
def test_ascii_data_round_trips_with_nothing_that_ends_a_script(value: dict) -> None:
    _check(value)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(_ANY, st.one_of(_ANY, st.lists(_ANY, max_size=4)), max_size=5))
def test_any_data_round_trips_with_nothing_that_ends_a_script(value: dict) -> None:
    _check(value)


def test_the_characters_that_matter_are_escaped_in_both_paths() -> None:
    for extra in ("", "\u00e9"):  # ASCII-only, then not
        text = f"</script><!-- a && b > c \x7f{extra}"
        out = script_json({"t": text})
        assert json.loads(out) == {"t": text}
        for ch, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\x7f", "\\u007f")):
            assert ch not in out and esc in out, out


def _as_lists(value: object) -> object:
    return json.loads(json.dumps(value))  # a map's tuples as JSON writes them


@settings(max_examples=150, deadline=None)
@given(
    st.lists(_ANY, min_size=1, max_size=3),
    st.lists(
        st.one_of(st.none(), st.just(0), st.tuples(st.integers(0, 2), st.integers(1, 9999))), max_size=30
    ),
    st.booleans(),
)
def test_a_maps_chunk_made_from_its_own_json_reads_as_the_map(
    files: list, lines: list, ascii_only: bool
) -> None:
    """A report's map chunk (render/sourcemap.map_value) carries JSON made from the map's own
    (`LineMap.json_text`, not encoded again): it parses to the chunk's value, is as safe in a script,
    and is the same bytes as script_json of the value where the paths are ASCII; alone and in a batch."""
    from tltrace.format.sourcemap import LineMap
    from tltrace.render.sourcemap import map_value

    if ascii_only:
        files = [f.encode("ascii", "replace").decode() for f in files]
    lines = [(min(v[0], len(files) - 1), v[1]) if isinstance(v, tuple) else v for v in lines]
    lmap = LineMap(
        tuple(files), tuple(lines), frozenset(range(0, len(lines), 3)), {0: (0, 4)} if lines else {}
    )
    value = map_value("0f" * 16, lmap)
    want = _as_lists({"t": "smap", "h": "0f" * 16, **lmap.to_json()})
    for out in (script_json(value), script_json([{"t": "srec", "i": 1}, value])):
        assert json.loads(out) in (want, [{"t": "srec", "i": 1}, want])
        assert not _FORBIDDEN & set(out), sorted(_FORBIDDEN & set(out))
    if ascii_only:
        assert script_json(value) == script_json(want)
