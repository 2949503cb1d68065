"""The command line of a Python child process that never imports from the current directory.

`python -m X` puts the cwd first on sys.path, `python -c` puts '' (the cwd), `python
script.py` the script's directory: a `tilelang.py` beside a bundle, in a Downloads folder,
would be imported in place of TileLang. tltrace's children (the replay child, the repro
probe, the NVRTC log child) start as `python -P -c CODE` instead: -P (Python 3.11)
prepends nothing, and CODE drops a leading '' itself first (`sys` is built in, so nothing
is imported before that), which is what keeps 3.10 safe. PYTHONPATH is kept (the device
machine finds TileLang through it); a script runs through `runpy.run_path`, which does
not put its directory on sys.path either.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

SAFE_PATH = ["-P"] if sys.version_info >= (3, 11) else []
_DROP_CWD = "import sys\nif sys.path and sys.path[0] in ('', '.'):\n    del sys.path[0]\n"
_RUN_SCRIPT = "import runpy\nsys.argv = sys.argv[1:]\nrunpy.run_path(sys.argv[0], run_name='__main__')\n"


def python_code(code: str, *args: str, python: str | None = None) -> list[str]:
    """Return the argv that runs `code` (with `args` as sys.argv[1:]) in a Python whose sys.path has no cwd."""
    return [python or sys.executable, *SAFE_PATH, "-c", _DROP_CWD + code, *args]


def python_script(script: str | os.PathLike, *args: str, python: str | None = None) -> list[str]:
    """Return the argv that runs the file `script` as __main__ without its directory or the cwd on sys.path."""
    return python_code(_RUN_SCRIPT, os.fspath(script), *args, python=python)


def tltrace_code(module: str, *args: str) -> list[str]:
    """Return the argv that runs `main(sys.argv[1:])` of tltrace's `module` in a Python with no cwd on sys.path.

    tltrace is found as this process found it: through PYTHONPATH or site-packages first,
    and its own directory appended last (after site-packages: it cannot shadow TileLang).
    """
    root = str(Path(__file__).resolve().parent.parent)
    code = f"sys.path.append({root!r})\nfrom {module} import main\nsys.exit(main(sys.argv[1:]))\n"
    return python_code(code, *args)


def traced_tltrace_code(module: str, *args: str) -> list[str]:
    """As `tltrace_code`, for a child whose `main(argv, enable, disable)` runs traced: the child's
    entry point is the Python API (`tltrace.api.enable` and `disable` handed to `main`), so the
    module below it imports no entry point."""
    root = str(Path(__file__).resolve().parent.parent)
    code = (
        f"sys.path.append({root!r})\nfrom tltrace import api\nfrom {module} import main\n"
        "sys.exit(main(sys.argv[1:], api.enable, api.disable))\n"
    )
    return python_code(code, *args)
