#!/usr/bin/env bash
# Runs on the GPU machine over what scripts/build-gpu.sh staged in .device/: the examples and
# the op tests on the GPU, the benchmarks, the Triton/torch reference harness when .ref/ holds
# it, and compute-sanitizer (memcheck, racecheck, synccheck) over the examples. Full logs go to
# $1 (default $OUT or ./gpu-logs); a short summary is printed last. GPU_CHECK_SKIP names steps
# to leave out, to fit a call's time limit (any of: examples ops differential aot sanitizer anchors
# bench sweep side-by-side probe); GPU_CHECK_TESTS, a Catch2 test spec (default "[interp]"), narrows the
# op tests and the differential run, e.g. to the tensor-core tests:
#   GPU_CHECK_SKIP="aot sweep bench anchors" GPU_CHECK_TESTS="*dot*,*matmul*,*attention*,*pipelin*,persistent*" \
#   SIDE_BY_SIDE_ARGS="--only matmul,attention" scripts/gpu-check.sh "$OUT"
set -uo pipefail
cd "$(dirname "$0")/.."
logs=${1:-${OUT:-gpu-logs}}
mkdir -p "$logs"
export LD_LIBRARY_PATH="$PWD/.device/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export TILEDSL_BACKEND=gpu
# The driver keeps JIT-compiled PTX in ~/.nv/ComputeCache; with it, a repeated "cold" compile
# skips the PTX -> cubin step (measured: 7 ms instead of 23 ms for vector add). Off, so that
# every compile here is what a first run on a clean machine pays.
export CUDA_CACHE_DISABLE=1
bin="$PWD/.device/bin"
work=$(mktemp -d)
summary=()
skip() { [[ " ${GPU_CHECK_SKIP:-} " == *" $1 "* ]] && summary+=("$1: skipped (GPU_CHECK_SKIP)"); }

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$logs/gpu.txt"

# The libraries the benchmarks compare with, through dlopen: cuSPARSE (SpMM) and cuBLAS (matmul),
# the toolkit's or the ones torch's wheels bring, with their dependencies' folders.
find_lib() { find /usr/local/cuda*/lib64 /usr/local/lib /usr/lib /opt -name "$1" 2>/dev/null | sort | tail -1; }
if [ -z "${TILEDSL_CUSPARSE_PATH:-}" ]; then
  TILEDSL_CUSPARSE_PATH=$(find_lib 'libcusparse.so.1[0-9]*')
  export TILEDSL_CUSPARSE_PATH
  # its own dependencies (nvJitLink) live beside it
  [ -n "$TILEDSL_CUSPARSE_PATH" ] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$(dirname "$TILEDSL_CUSPARSE_PATH"):$(dirname "$TILEDSL_CUSPARSE_PATH")/../../nvjitlink/lib"
fi
if [ -z "${TILEDSL_CUBLAS_PATH:-}" ]; then
  TILEDSL_CUBLAS_PATH=$(find_lib 'libcublas.so.1[0-9]*')
  export TILEDSL_CUBLAS_PATH
  [ -n "$TILEDSL_CUBLAS_PATH" ] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$(dirname "$TILEDSL_CUBLAS_PATH")"
fi

if ! skip examples; then
echo "== examples on the GPU"
pass=0; fail=0
for ex in "$bin"/example-*; do
  if (cd "$work" && timeout 120 "$ex") >>"$logs/examples.log" 2>&1; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
done
grep -E " (OK|FAIL)$|^error" "$logs/examples.log"
summary+=("examples on the GPU: $pass passed, $fail failed")
summary+=("$(grep -cE ' OK$' "$logs/examples.log") OK lines")
fi

if ! skip ops; then
echo "== op tests on the GPU"
tests=${GPU_CHECK_TESTS:-[interp]}
(cd "$work" && timeout 300 "$bin/tiledsl-tests" "$tests") >"$logs/ops.log" 2>&1
summary+=("op tests on the GPU ($tests): $(grep -E '^(All tests passed|test cases:)' "$logs/ops.log" | tail -1)")
tail -3 "$logs/ops.log"
fi

if ! skip ops; then
echo "== kernels that trap on the GPU, one process each"
for spec in "trap: a loop whose step is zero*" "trap: a failing device_assert*"; do
  (cd "$work" && timeout 60 "$bin/tiledsl-tests" "$spec") >>"$logs/traps.log" 2>&1
  summary+=("$spec: $(grep -E '^(All tests passed|test cases:)' "$logs/traps.log" | tail -1)")
done
fi

if ! skip differential; then
echo "== differential: the op tests and random kernels, each GPU launch compared with the interpreter"
(cd "$work" && TILEDSL_COMPARE_INTERPRETER=1 timeout 400 "$bin/tiledsl-tests" "${GPU_CHECK_TESTS:-[interp]}") >"$logs/differential.log" 2>&1
# The sm_80 path (mma.sync, ldmatrix) on the same GPU, forced, where the tests are narrowed.
if [ -n "${GPU_CHECK_TESTS:-}" ]; then
  (cd "$work" && TILEDSL_ARCH=sm_80 TILEDSL_COMPARE_INTERPRETER=1 timeout 300 "$bin/tiledsl-tests" "$GPU_CHECK_TESTS") >"$logs/differential-sm80.log" 2>&1
  summary+=("differential, forced sm_80: $(grep -E '^(All tests passed|test cases:)' "$logs/differential-sm80.log" | tail -1)")
fi
summary+=("differential: $(grep -E '^(All tests passed|test cases:)' "$logs/differential.log" | tail -1); $(grep -E 'GPU launches compared' "$logs/differential.log" | tail -1)")
grep -E "disagree|FAILED" "$logs/differential.log" | head -20
fi

if ! skip aot; then
echo "== ahead-of-time compiled add, built with the driver API only"
test/aot-test.sh "$bin/tiledsl-aot" "$PWD" run 2>&1 | tee "$logs/aot.log"
summary+=("AOT: $(tail -1 "$logs/aot.log")")
fi

# memcheck (out-of-bounds and misaligned accesses), racecheck (shared-memory hazards: a barrier
# codegen left out) and synccheck (barriers not reached by every thread).
echo "== compute-sanitizer"
if ! skip sanitizer && command -v compute-sanitizer >/dev/null; then
  for tool in memcheck racecheck synccheck; do
    for ex in "$bin"/example-*; do
      (cd "$work" && timeout 120 compute-sanitizer --tool "$tool" "$ex") >>"$logs/sanitizer-$tool.log" 2>&1
      summary+=("compute-sanitizer $tool $(basename "$ex"): $(tail -1 "$logs/sanitizer-$tool.log")")
    done
  done
fi

# The reference harness runs before and after our benchmarks: its figures move by several per
# cent between runs (torch's add at 2^20: 1467 to 1625 GB/s over runs 5-8), so two passes show
# how far a single comparison can be trusted.
anchors() {
  [ -f .ref/triton_torch_anchors.py ] || return 0
  skip anchors && return 0
  echo "== reference harness (Triton, torch), pass $1"
  PYTHONUNBUFFERED=1 timeout 400 python3 .ref/triton_torch_anchors.py 2>&1 | tee "$logs/anchors$1.log" | tail -40
}
anchors 1

# The tensor cores' ceilings through our own driver path: hand-written PTX chains of mma.sync and
# (sm_90a) wgmma from shared memory, a few seconds.
if ! skip probe; then
  echo "== tensor-core probes"
  (cd "$work" && timeout 120 "$bin/tiledsl-bench" probe) 2>&1 | tee "$logs/probe.log" | grep -E "^probe"
  while IFS= read -r line; do summary+=("$line"); done < <(grep -E '^probe' "$logs/probe.log")
fi

if ! skip bench; then
echo "== benchmarks"
export TILEDSL_CACHE_DIR="$work/cache"  # empty: the first launch is a cold compile
(cd "$work" && TILEDSL_PRINT_AUTOTUNING=1 TILEDSL_PRINT_COMPILE_TIMES=1 timeout 300 "$bin/tiledsl-bench" --csv="$logs/bench.csv") 2>&1 | tee "$logs/bench.log"
(cd "$work" && TILEDSL_PRINT_COMPILE_TIMES=1 "$bin/tiledsl-bench" first-launch) 2>&1 | sed 's/^/warm start (disk cache): /' | tee -a "$logs/bench.log"
# Cold starts are noisy: cold_runs (odd) fresh processes per variant, each with an empty cache,
# the variants interleaved: the default (the compiler, nvJitLink included, started up beside
# cuInit); the driver's JIT instead of nvJitLink (TILEDSL_NVJITLINK_PATH=0); no start-up beside
# cuInit (TILEDSL_WARM_COMPILER=0). Medians in the summary.
variants=("default" "TILEDSL_NVJITLINK_PATH=0" "TILEDSL_WARM_COMPILER=0")
cold_runs=7
for i in $(seq "$cold_runs"); do
  for v in "${variants[@]}"; do
    (cd "$work" && env ${v/default/} TILEDSL_CACHE_DIR=$(mktemp -d) TILEDSL_PRINT_COMPILE_TIMES=1 "$bin/tiledsl-bench" cold) 2>&1 |
      sed "s/^/cold start, $v, run $i: /" | tee -a "$logs/cold.log"
  done
done
for v in "${variants[@]}"; do
  for what in add attention; do
    med=$(grep -F "cold start, $v, run" "$logs/cold.log" | grep -E "cold compile \+ first launch, $what +[0-9.]+ ms$" | awk '{print $(NF-1)}' | sort -g | sed -n "$(((cold_runs + 1) / 2))p")
    summary+=("cold compile + first launch, $what, median of $cold_runs processes ($v): $med ms")
  done
done
fi

# Each workload over a range of sizes against its reference (bench/plot_sweep.py draws the CSV).
if ! skip sweep; then
echo "== size sweeps"
(cd "$work" && timeout 400 "$bin/tiledsl-bench" sweep --csv="$logs/sweep.csv") 2>&1 | tee "$logs/sweep.log" | grep -E "^sweep|WRONG"
summary+=("sweep: $(grep -c '^sweep ' "$logs/sweep.log") points in sweep.csv")
fi

# Our kernels beside torch's and Triton's in one process, alternating
# (bench/torch_side_by_side.py), where torch and triton are installed: one timing call lands in
# one of two levels a few per cent apart, so figures from two processes cannot settle a ratio
# near 1. SIDE_BY_SIDE_ARGS passes options (e.g. "--only matmul,attention --rounds 7").
if ! skip side-by-side && python3 -c "import torch, triton" 2>/dev/null; then
  echo "== our kernels beside torch and Triton, one process"
  # shellcheck disable=SC2086 # SIDE_BY_SIDE_ARGS is a list of options
  "$bin/tiledsl-bench" export "$work/exported" >/dev/null &&
    PYTHONUNBUFFERED=1 timeout 540 python3 bench/torch_side_by_side.py "$work/exported" ${SIDE_BY_SIDE_ARGS:-} 2>&1 |
    tee "$logs/side_by_side.log"
  while IFS= read -r line; do summary+=("$line"); done < <(grep -E '^side-by-side' "$logs/side_by_side.log")
fi

anchors 2
for f in .ref/*.py; do
  [ "$f" = .ref/triton_torch_anchors.py ] || [ ! -f "$f" ] && continue
  PYTHONUNBUFFERED=1 timeout 200 python3 "$f" 2>&1 | tee "$logs/$(basename "$f" .py).log"
done

echo "== summary"
printf '%s\n' "${summary[@]}"
