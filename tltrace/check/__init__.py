"""Checks over compiles: `tltrace check`, `Compile.check` and `Compile.expect`.

- `checks`: which compiles and texts a check reads, and its outcomes (nothing to check is
  an error; a regex match runs in a child under a deadline).
- `filecheck`: LLVM FileCheck directives matched against a text, pure; `patterns` reads a
  check file's directives and turns each pattern into a Python regex.
- `expect`: the `--expect` grammar over facts, pure.

This `__init__` imports nothing: the deadline's child imports `tltrace.check.filecheck` alone.
"""
