"""The three-way decision, row by row against the table in docs/edit-recompile.md, and as a property."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tltrace.reconcile.decide import Action, decide

B, G, W = "baseline\n", "generated\n", "working\n"


@pytest.mark.parametrize(
    "baseline, working, generated, action, compile_text, new_base, new_work, backups",
    [
        (B, B, B, Action.UNCHANGED, B, B, B, (False, False)),
        (B, B, G, Action.REGENERATED, G, G, G, (False, False)),
        (B, W, B, Action.PATCHED, W, B, W, (False, False)),
        (B, G, G, Action.SYNCED, G, G, G, (False, False)),
        (B, W, G, Action.CONFLICT, G, G, G, (True, True)),
        (None, None, G, Action.INIT, G, G, G, (False, False)),
        (None, W, G, Action.INIT_BACKUP, G, G, G, (True, False)),
        (None, G, G, Action.INIT_BACKUP, G, G, G, (True, False)),
        (B, None, B, Action.UNCHANGED, B, B, B, (False, False)),  # deleted working file: re-created
        (B, None, G, Action.REGENERATED, G, G, G, (False, False)),
    ],
)
def test_table(baseline, working, generated, action, compile_text, new_base, new_work, backups):
    d = decide(baseline, working, generated)
    assert d.action is action
    assert (d.compile_text, d.baseline, d.working) == (compile_text, new_base, new_work)
    assert (d.backup_working, d.backup_baseline) == backups


def test_tags():
    assert decide(B, B, B).tag is None
    assert decide(None, None, G).tag is None
    assert decide(B, W, B).tag == "PATCHED"
    assert decide(None, W, G).tag == "INIT-BACKUP"
    assert decide(B, W, B).edited and not decide(B, G, G).edited


texts = st.sampled_from(["", "a\n", "b\n", "a\nb\n", "c"])


@given(texts | st.none(), texts | st.none(), texts)
def test_no_edit_is_dropped_without_a_backup(baseline, working, generated):
    """Whenever the working text is replaced by something else, it is either backed up or it was no edit."""
    d = decide(baseline, working, generated)
    if working is not None and d.working != working:
        assert d.backup_working or working == baseline
    if d.backup_baseline:
        assert d.backup_working  # CONFLICT saves the pair
    if d.action is Action.PATCHED:
        assert d.compile_text == working
    else:
        assert d.compile_text == generated
    if working is not None and baseline is not None:
        assert d.baseline == (
            baseline if d.action is Action.PATCHED or d.action is Action.UNCHANGED else generated
        )
