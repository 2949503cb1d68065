"""Another process for a test: `action` run in a forked child, optionally killed after a file-system step."""

from __future__ import annotations

import os
from pathlib import Path

from tltrace.fs import atomic as _atomic

KILLED = 77  # the child's exit status when the step hook killed it


def in_child(action, *, kill_at_step: int | None = None) -> int:
    """Run `action` in a forked child; with `kill_at_step`, os._exit right after that step. Return its exit code."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 0
        try:
            if kill_at_step is not None:
                count = [0]

                def hook(what: str, path: Path) -> None:
                    count[0] += 1
                    if count[0] == kill_at_step:
                        os._exit(KILLED)

                _atomic.STEP_HOOK = hook
            action()
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)
