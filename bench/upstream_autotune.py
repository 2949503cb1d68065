"""TileLang's upstream gemm autotuner over an even subset of its grid (the H200's 96-config run).

    python bench/upstream_autotune.py [--configs 96] [--m 4096 --n 4096 --k 4096]

Loads `.upstream/examples/gemm/example_gemm_autotune.py` unmodified (TLTRACE_UPSTREAM
overrides where `.upstream` is), keeps every third config of its 288-config grid
(all block sizes, stages, thread counts and rasterizations stay represented), and
runs its `main` with the autotuner on, as `--use_autotune` does.
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
import timeline  # noqa: E402

UPSTREAM = Path(os.environ.get("TLTRACE_UPSTREAM") or REPO / ".upstream")
EXAMPLE = UPSTREAM / "examples/gemm/example_gemm_autotune.py"


def subset(configs: list, n: int) -> list:
    """Return n configs spread evenly over `configs` (all of them when n covers them)."""
    if n >= len(configs):
        return list(configs)
    step = len(configs) / n
    return [configs[int(i * step)] for i in range(n)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", type=int, default=96)
    ap.add_argument("--m", type=int, default=4096)
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--k", type=int, default=4096)
    a = ap.parse_args(argv)
    if not EXAMPLE.is_file():
        print(
            f"upstream_autotune.py: error: {EXAMPLE} is missing (copy .upstream/ into the checkout)",
            file=sys.stderr,
        )
        return 2
    spec = importlib.util.spec_from_file_location("example_gemm_autotune", EXAMPLE)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    full = mod.get_configs
    mod.get_configs = lambda *args, **kw: subset(full(*args, **kw), a.configs)
    if os.environ.get("BENCH_SWITCH_INTERVAL"):  # an experiment: the GIL's switch interval, seconds
        sys.setswitchinterval(float(os.environ["BENCH_SWITCH_INTERVAL"]))
    if os.environ.get("BENCH_PRINT_ONLY"):  # an experiment: nothing after the print (bench/gil_cost.py)
        import gil_cost

        gil_cost._print_only()
    sampler = timeline.start()  # BENCH_TIMELINE: where the wall goes (bench/timeline.py)
    # (m, n, k, use_autotune, with_roller[, profile_backend]): older copies of the example lack the last
    n_params = len(inspect.signature(mod.main).parameters)
    t0 = time.perf_counter()
    mod.main(*[a.m, a.n, a.k, True, False, "event"][:n_params])
    # The tuner's own wall (its compiles, then its benchmarks; bench/autotune.py reads it as the
    # `compile calls` column): it stops before tltrace's workers finish, which the exit waits for.
    print(f"upstream_autotune: compile calls: {time.perf_counter() - t0:.3f} s (the example's main)")
    if sampler is not None:
        sampler.write("main-end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
