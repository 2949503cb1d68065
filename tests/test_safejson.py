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
