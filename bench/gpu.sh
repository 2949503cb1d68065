#!/usr/bin/env bash
# GPU checks and benchmarks, one entry point for the CUDA machine. From the checkout's root,
# with .device (TileLang for the device, see ../shared/device/prepare) and .upstream (copies
# of TileLang's upstream examples, ignored by git) carried:
#
#   . .device/env.sh && bash bench/gpu.sh PART
#
# Each PART ends within about 9 minutes (one device call of at most 10), writes at most
# 8 files under $OUT (default tmp/gpu-out) and exits non-zero when a check failed:
#
#   check      pytest -m gpu: CUDA codegen (tvm_ffi and nvrtc), nvrtc edit-and-recompile,
#              upstream FlashAttention fwd and MLA decode traced (CUDA codegen records)
#   autotune   upstream gemm autotuner, full grid (288 configs): untraced, `tltrace run --quiet`,
#              `tltrace run --quiet --mode html`, timed; then the grid checks on those traces
#              (every compile kept with the default --keep, one invocation id, distinct
#              signatures, the index names every compile)
#   builtin    the same grid: untraced, TileLang's built-in tracer (terminal, html), timed
#   proxy      issue 17's compile-phase proxy: 16 upstream-GEMM configs compiled for the GPU in
#              16 threads of one process; untraced, tltrace records, tltrace html; interleaved
#              reps (REPS, default 5), medians -> proxy.md
#   cost       issue 17's in-process CPU table (bench/capture_cost.py: two small CPU compiles plus
#              the sm_90a lowering; untraced, tltrace worker and --sync, built-in) on this
#              machine's otherwise idle cores; REPS (default 7) interleaved reps -> cost.md
#   profile    py-spy (`--threads --idle`, carried as a wheel in .whl/) over `tltrace run --quiet`
#              and `--mode html --quiet` of a CONFIGS-config autotune (default 16; PROFILE_MODES
#              picks from untraced, quiet, html, default "quiet html"); per-thread
#              summaries (bench/profile_threads.py): the compiling threads' share in tltrace
#              frames -> profile-MODE.md, raw stacks -> profile-MODE.txt (two of them side by side:
#              python bench/profile_diff.py profile-untraced.txt profile-quiet.txt)
#   startup    an empty script that imports TileLang, plain and under `tltrace run --quiet`,
#              3 times each (wall, user, sys), then cProfile of the traced one -> startup.txt
#              (the H200's traced start-up took 1.9 s more CPU before `main`; the CPU machine's
#              does not), and bench/startup_diff.py (plain against traced, by function) -> startup_diff.txt
#   gil        issue 34's GIL table (bench/gil_cost.py: py-spy `--gil` over sm_90a lowerings, TileLang's
#              and tltrace's GIL time per lowering) and a traced compile's wall with the worker
#              beside it (bench/compile_wall.py, switch intervals) -> gil.md, compile_wall.md
#   fidelity   a GEMM's do_bench latency while tltrace's workers write what a CONFIGS-thread
#              pool (default 16) left them (bench/bench_fidelity.py), twice -> fidelity.md
#   all        check, autotune, builtin in a row (only where one call may run longer)
#
# CONFIGS=N runs `autotune` over an even N-config subset of the grid (bench/upstream_autotune.py;
# the 288-compile grid checks are then skipped) and REPS=R gives each mode R interleaved reps,
# e.g. issue 17's 96-config run: `CONFIGS=96 REPS=3 bash bench/gpu.sh autotune untraced,quiet,html c96`.
# RUNS=FIRST-LAST runs only those runs (1-based) of the REPS x MODES schedule, modes alternating
# rep by rep in a rotating order (untraced, quiet, html, then quiet, html, untraced, ...), so that
# several calls make one interleaved measurement. Issue 51's 4 reps per mode of the 96-config run
# (12 runs of 80-105 s on the H200: three calls of about 7 minutes; two calls of 6 runs where a
# run takes under 80 s):
#   CONFIGS=96 REPS=4 RUNS=1-4 bash bench/gpu.sh autotune untraced,quiet,html r1
#   CONFIGS=96 REPS=4 RUNS=5-8 bash bench/gpu.sh autotune untraced,quiet,html r5
#   CONFIGS=96 REPS=4 RUNS=9-12 bash bench/gpu.sh autotune untraced,quiet,html r9
#   python bench/gpu.py summarize --pool OUT_r1 OUT_r5 OUT_r9 > bench/results/gpu_autotune.md
#
# `autotune` and `builtin` take MODES and a TAG (which names the files), to redo what a
# part's budget skipped, e.g. `bash bench/gpu.sh autotune untraced,html c`; modes:
# untraced, quiet, html, builtin-terminal, builtin-html; MODE@VARIANT runs an experiment
# (bench/autotune.py VARIANTS: @switch, the GIL's switch interval at 0.5 ms; @nomap, no source maps;
# @printonly, nothing after the print (a writer process's floor); @w2, two
# workers; @q4k, 4096-job queues; @wait, TLTRACE_WAIT=1). With CONFIGS, every run's
# wall is split into start-up, compiling, benchmarking and tail (bench/timeline.py) ->
# timeline-TAG.md, e.g. `CONFIGS=48 bash bench/gpu.sh autotune quiet,untraced,quiet@switch,quiet@w2 e1`.
#
# Then, on the CPU machine, with the files of each part in one folder:
#   python bench/gpu.py summarize FOLDER > bench/results/gpu_autotune.md
#   mkdir -p .upstream/pairs && cp FOLDER/largest-pair.json .upstream/pairs/
#   python bench/run.py --only align      # (or --only results: only re-read bench/results)
#
# BUDGET (seconds, default 480) bounds the timed runs of a part; a run that would not
# fit is skipped and said in the results. AUTOTUNE_ARGS replaces the example's arguments
# (default: --use_autotune, its default 4096^3 sizes).
set -uo pipefail
cd "$(dirname "$0")/.."
part=${1:-}
out=${OUT:-$PWD/tmp/gpu-out}
budget=${BUDGET:-480}
mkdir -p "$out" "${TMPDIR:-/tmp}/tltrace-gpu-bench"
export PYTHONUNBUFFERED=1 TILELANG_DISABLE_CACHE=1 TILELANG_AUTO_TUNING_DISABLE_CACHE=1
unset TL_LOWER_TRACE TL_LOWER_TRACE_DIR TLTRACE_EXAMPLES_CPU
py=${PYTHON:-python3}
upstream=${TLTRACE_UPSTREAM:-$PWD/.upstream}
work=${TMPDIR:-/tmp}/tltrace-gpu-bench

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }

need_upstream() {
  local f
  for f in examples/gemm/example_gemm_autotune.py examples/flash_attention/example_mha_fwd_bshd.py \
           examples/deepseek_mla/example_mla_decode.py; do
    [ -f "$upstream/$f" ] || { echo "gpu.sh: error: $upstream/$f missing (copy .upstream/ into the checkout and carry it)" >&2; return 2; }
  done
}

about() {
  { date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -2
    "$py" -c 'import sys, torch, tilelang; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.cuda.is_available(), "tilelang", tilelang.__version__)' 2>&1 | tail -1
    echo "nproc $(nproc)"
    (cd "$upstream" 2>/dev/null && sha256sum examples/*/*.py 2>/dev/null); } | tee "$out/about-$1.txt"
}

run_check() {
  local rc=0
  about check
  need_upstream || return 2
  rm -rf "$work/check"
  "$py" -m pytest -m gpu -q -rA -p no:cacheprovider --basetemp="$work/check" --junitxml="$out/check-junit.xml" \
    tests/test_gpu_capture.py tests/test_gpu_edit.py tests/test_gpu_upstream.py -k "not autotune" 2>&1 \
    | tee "$out/check.log" || rc=1
  # The largest IR pair of these traces (FlashAttention, MLA decode), for bench/align.py here.
  "$py" bench/align.py --find-largest "$work/check" --out "$out/largest-pair.json" || true
  rm -rf "$work/check"
  return $rc
}

run_autotune() {
  local tag=$1 modes=$2 rc=0
  about "$tag"
  need_upstream || return 2
  rm -rf "$work/$tag"
  local args=()
  [ -n "${AUTOTUNE_ARGS:-}" ] && args=(--args "$AUTOTUNE_ARGS")
  [ -n "${CONFIGS:-}" ] && args+=(--configs "$CONFIGS")
  "$py" bench/gpu.py autotune --out "$out" --tag "$tag" --modes "$modes" --budget "$budget" \
    --reps "${REPS:-1}" ${RUNS:+--runs "$RUNS"} --keep-trace "$work/$tag" ${args[@]+"${args[@]}"} 2>&1 | tee "$out/autotune-$tag.log" || rc=1
  if [ -z "${CONFIGS:-}" ] && [[ ",$modes," == *,quiet,* || ",$modes," == *,html,* ]]; then
    TLTRACE_GPU_AUTOTUNE_TRACE="$work/$tag" "$py" -m pytest -m gpu -q -rA -p no:cacheprovider \
      tests/test_gpu_upstream.py -k autotune 2>&1 | tee "$out/grid-checks.log" || rc=1
  fi
  rm -rf "$work/$tag"
  return $rc
}

run_proxy() {
  about proxy
  "$py" bench/capture_cost.py --gpu-proxy 16 --reps "${REPS:-5}" \
    --configs "untraced,tltrace records,tltrace html" 2>"$out/proxy.log" | tee "$out/proxy.md"
}

find_spy() {  # py-spy on PATH, else installed from the wheel carried in .whl/
  spy=py-spy
  if ! command -v py-spy >/dev/null; then
    "$py" -m pip install -q --no-index --no-deps --target "$work/pyspy" .whl/py_spy-*.whl || return 2
    spy="$work/pyspy/bin/py-spy"
    export PATH="$work/pyspy/bin:$PATH"
  fi
}

run_gil() {
  about gil
  find_spy || return 2
  "$py" bench/gil_cost.py --reps "${REPS:-3}" 2>"$out/gil.log" | tee "$out/gil.md"
  "$py" bench/compile_wall.py --reps "${REPS:-5}" \
    --configs "untraced,records,records@0.0005,records@0.001,html" 2>>"$out/gil.log" | tee "$out/compile_wall.md"
}

run_profile() {
  about profile
  need_upstream || return 2
  local spy mode rc=0
  find_spy || return 2
  for mode in ${PROFILE_MODES:-quiet html}; do
    local cmd=("$py" -m tltrace run --quiet --trace-dir "$work/prof")
    [ "$mode" = html ] && cmd+=(--mode html)
    [ "$mode" = untraced ] && cmd=("$py")
    rm -rf "$work/prof"
    "$spy" record --format raw --threads --idle --subprocesses --full-filenames -r "${RATE:-50}" \
      -o "$out/profile-$mode.txt" -- "${cmd[@]}" bench/upstream_autotune.py --configs "${CONFIGS:-16}" \
      >"$out/profile-$mode.log" 2>&1 || rc=1
    "$py" bench/profile_threads.py "$out/profile-$mode.txt" | tee "$out/profile-$mode.md"
  done
  rm -rf "$work/prof"
  return $rc
}

run_startup() {
  about startup
  local e="$work/startup_empty.py" i
  rm -rf "$work/startup"
  printf 'import tilelang\n' >"$e"
  {
    for i in 1 2 3; do
      /usr/bin/time -f "plain %e s %U user %S sys" "$py" "$e"
      /usr/bin/time -f "traced %e s %U user %S sys" "$py" -m tltrace run --quiet --trace-dir "$work/startup" "$e"
    done
    "$py" -m cProfile -o "$work/startup.prof" -m tltrace run --quiet --trace-dir "$work/startup" "$e"
    "$py" - "$work/startup.prof" <<'PY'
import pstats, sys
st = pstats.Stats(sys.argv[1])
rows = sorted(st.stats.items(), key=lambda kv: -kv[1][3])
print("cumulative s, own s, calls, function (the 40 largest; then tltrace's own, 40)")
for (path, line, fn), (cc, nc, tt, ct, _) in rows[:40]:
    print(f"{ct:8.3f} {tt:8.3f} {nc:8d}  {path}:{line}({fn})")
print("--- tltrace's own frames")
for (path, line, fn), (cc, nc, tt, ct, _) in [r for r in rows if "/tltrace/" in r[0][0]][:40]:
    print(f"{ct:8.3f} {tt:8.3f} {nc:8d}  {path}:{line}({fn})")
PY
  } >"$out/startup.txt" 2>&1
  grep -E "^(plain|traced)" "$out/startup.txt"
  rm -rf "$work/startup"
}

run_fidelity() {
  about fidelity
  local i
  for i in 1 2; do
    echo "### run $i" >>"$out/fidelity.md"
    "$py" -m tltrace run --quiet --trace-dir "$work/fidelity" bench/bench_fidelity.py \
      --configs "${CONFIGS:-16}" --out "$out/fidelity.md" >>"$out/fidelity.log" 2>&1 || echo "fidelity: run $i failed" >&2
    rm -rf "$work/fidelity"
  done
  cat "$out/fidelity.md"
}

case "$part" in
  check) run_check ;;
  startup) run_startup ;;
  fidelity) run_fidelity ;;
  profile) run_profile ;;
  gil) run_gil ;;
  proxy) run_proxy ;;
  cost) about cost; "$py" bench/capture_cost.py --reps "${REPS:-7}" 2>"$out/cost.log" | tee "$out/cost.md" ;;
  autotune) run_autotune "${3:-a}" "${2:-untraced,quiet,html}" ;;
  builtin) run_autotune "${3:-b}" "${2:-untraced,builtin-terminal,builtin-html}" ;;
  all) rc=0; run_check || rc=1; run_autotune a untraced,quiet,html || rc=1
       run_autotune b untraced,builtin-terminal,builtin-html || rc=1; exit $rc ;;
  -h|--help|help) usage ;;
  *) usage >&2; echo "gpu.sh: error: say which part: check, autotune, builtin, proxy, cost, profile, startup, gil, fidelity or all" >&2; exit 2 ;;
esac
