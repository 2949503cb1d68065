"""Reproducers and bundles: what a compile needs to be rerun without the user's code.

capture.py   saves, at capture time, the frontend IR (TVM JSON), target, PassContext
             config and versions of each compile, and the input of a pass that fails
             (a recorder: session/recorder.py; tltrace/recorders.py registers it)
make.py      `tltrace repro`: a directory with a standalone repro.py for one pass
bundle.py    `tltrace bundle` / `tltrace replay`: one file holding whole compiles
_standalone.py  the script copied into a repro directory or a bundle: needs TileLang only
"""
