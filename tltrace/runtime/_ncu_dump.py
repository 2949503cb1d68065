"""Nsight Compute's report as plain JSON, read through ncu's own Python module (`ncu_report`).

A standalone program: it imports nothing of tltrace, only the standard library and
`ncu_report` (ncu's <install>/extras/python, put on sys.path by runtime/ncu_read.py, which
runs it as `python -P _ncu_dump.py REPORT OUT.json`). It writes, per profiled kernel launch
(an ncu "action"): the kernel's name, its first PC (`launch__function_pcs`), grid and block,
and per SASS instruction that has a sample or an executed count: its offset from the
function's start, its SASS text, the file and line `source_info` gives, the warp-state
samples (`smsp__pcsamp_sample_count`), each stall reason's samples
(`smsp__pcsamp_warps_issue_stalled_*`, without the `_not_issued` ones) and `inst_executed`.
Exit status 0, or 1 with one line on stderr when the report cannot be read.
"""

import json
import sys

SAMPLES = "smsp__pcsamp_sample_count"
STALL = "smsp__pcsamp_warps_issue_stalled_"
EXECUTED = "inst_executed"
SCHEMA = 1


def _scalar(action, name):
    """A launch attribute's value (ncu keeps launch__* as metrics of one instance)."""
    try:
        m = action.metric_by_name(name)
        if m is None:
            return None
        return m.as_double(0) if m.num_instances() else m.as_double()
    except Exception:
        return None


def _per_pc(metric):
    """{pc: value} of an instanced metric (its correlation ids are the PCs)."""
    out: dict = {}
    try:
        n = metric.num_instances()
        ids = metric.correlation_ids()
    except Exception:
        return out
    for i in range(n):
        try:
            out[ids.as_uint64(i)] = metric.as_double(i)
        except Exception:
            continue
    return out


def _dims(action, prefix):
    vals = [_scalar(action, f"{prefix}_{a}") for a in "xyz"]
    return [int(v) for v in vals] if all(v is not None for v in vals) else None


def action_record(action):
    """One launch: {kernel, function_pc, grid, block, pcs: [...]} (pcs sorted by offset)."""
    names = list(action.metric_names())
    samples, executed, stalls = {}, {}, {}
    for name in names:
        if name == SAMPLES:
            samples = _per_pc(action.metric_by_name(name))
        elif name == EXECUTED:
            executed = _per_pc(action.metric_by_name(name))
        elif name.startswith(STALL) and not name.endswith("_not_issued"):
            stalls[name[len(STALL) :]] = _per_pc(action.metric_by_name(name))
    start = _scalar(action, "launch__function_pcs")
    base = int(start) if start is not None else min(list(samples) + list(executed) or [0])
    pcs = []
    for pc in sorted(set(samples) | set(executed)):
        row = {
            "offset": pc - base,
            "samples": int(samples.get(pc, 0)),
            "inst": int(executed.get(pc, 0)),
            "stalls": {k: int(v[pc]) for k, v in sorted(stalls.items()) if v.get(pc)},
        }
        try:
            row["sass"] = str(action.sass_by_pc(pc)).strip()
        except Exception:
            row["sass"] = None
        try:
            si = action.source_info(pc)
            row["file"], row["line"] = (si.file_name(), int(si.line())) if si else (None, None)
        except Exception:
            row["file"], row["line"] = None, None
        pcs.append(row)
    return {
        "kernel": action.name(),
        "function_pc": int(start) if start is not None else None,
        "grid": _dims(action, "launch__grid_dim"),
        "block": _dims(action, "launch__block_dim"),
        "pcs": pcs,
    }


def main(argv):
    import ncu_report  # type: ignore[import-not-found]  # ncu's own module, on sys.path for this child

    report, out = argv
    ctx = ncu_report.load_report(report)
    actions = []
    for ri in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(ri)
        for ai in range(rng.num_actions()):
            actions.append(action_record(rng.action_by_idx(ai)))
    with open(out, "w") as f:
        json.dump({"version": SCHEMA, "source": "ncu_report", "actions": actions}, f)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except Exception as exc:  # one line on stderr for the parent to say (Python writes it), exit 1
        sys.exit(f"ncu_report: {type(exc).__name__}: {exc}")
