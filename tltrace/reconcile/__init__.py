"""Edit-and-recompile: working files, baselines and the three-way reconcile.

decide.py and merge.py are pure (texts in, a decision or a merged text out); files.py is
the thin, journalled file layer (locks, atomic writes, backups); workflow.py ties them to
a compile; variant.py names a kernel's working files by launch shape; resolve.py is
`resolve-conflict`; watch.py reruns a script on every save.
"""
