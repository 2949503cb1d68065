"""A stand-in for TileLang that child processes of quick-loop tests import first (tests/_cli.py `cli_env`).

Under the quick selection (`-m "not compile ..."`) a test is not meant to compile; a child process it
starts through the shared CLI helpers that imports TileLang means it does, unmarked. It fails here,
loudly: the message goes to stderr as well, since the importer (tltrace's own check of TileLang's seam)
may turn the ImportError into a line of its own.
"""

import sys

MESSAGE = (
    "quick selection: this test compiles; mark it compile (@pytest.mark.compile, or name what compiles in "
    "its source: tests/conftest.py _COMPILES). A child process of a test run under -m 'not compile' "
    "imported TileLang (tests/_no_tilelang)"
)
sys.stderr.write(MESSAGE + "\n")
raise ImportError(MESSAGE)
