"""History: reading what was recorded.

runs.py is the one reader of `.run_records` (scripts, invocations, RUN specs, manifests,
texts by validated hash; every path kept inside its run directory); compare.py pairs
and diffs compiles and invocations for `diff-runs`; retention.py is the one pruner
shared by `run --keep`, `clean` and `enable()`; profile.py sums pass times for
`show --profile`, the reports' profile view and the Chrome trace.
"""
