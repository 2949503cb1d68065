"""At run time: the traced script run underneath an outside tool, and what the tool measured.

- `sanitize`, `sanitizer_parse`, `sanitizer_lines`: compute-sanitizer's errors named at the
  user's Python lines (run --sanitize).
- `outer`: run the same `tltrace run` underneath a tool (a command-line prefix and an
  environment) and find the invocation it recorded; generic (ncu, compute-sanitizer).
- `ncu`: Nsight Compute: where it is, its command line, its one-line problems, its report read.
- `_ncu_dump`: the standalone child that reads a report through ncu's own `ncu_report`.
- `ncu_csv`: ncu's source page as CSV (the fallback without ncu's Python module), and its per-line view.
- `profiled`: the profile kept beside the compile it measured (`ncu.json`); its hot lines are
  history/hotlines.py's (folded by history/hot.py, pure), so that the report can read them too.
"""
