#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The first thing to run when a GPU is at hand: one call, under 8 minutes on an
# H100/H200, from a mini5d build made elsewhere (the GPU node needs no compiler, MPI,
# HDF5 or hwloc: only the GPU driver, Python and, for the anchor, PyTorch).
# usage: scripts/gpu-check.sh BUILD_DIR [CLUSTER.yaml] [OUT_DIR]
#   BUILD_DIR: a mini5d build for the GPU (scripts/check-backend.sh against a Kokkos
#     CUDA or HIP install), with the shared libraries its programs need beside it in
#     BUILD_DIR/gpu-libs (scripts/gpu-bundle.sh BUILD_DIR copies them there).
#   CLUSTER.yaml: the card's dense peaks for the MFU (default inputs/clusters/h100-sxm-8.yaml)
#   OUT_DIR: where the logs, reports and tables go (default BUILD_DIR/gpu-check, or $OUT)
# Environment: GPU_CHECK_STEPS (mini5d steps per run, default 12), GPU_CHECK_PYTHON (the
#   Python with PyTorch, default python3), GPU_CHECK_NO_PEER=1 (skip PyTorch),
#   GPU_CHECK_DECKS (default gpt2-124m,llama-small: deck names in inputs/).
# Records, in OUT_DIR:
#   1. the GPU (nvidia-smi -L or rocm-smi), unit.log: every unit test binary run on it;
#   2. gpu-check.md / .json: gpt2-124m and llama-small at fp32 and bf16 (tokens/s, model
#      TFLOP/s, MFU, kernel table), and PyTorch's peer model on the same GPU with SDPA
#      attention, in fp32 and with bf16 autocast (perf/gpu_check.py).
# Exit status 0 only when every unit test and every run passed.
set -uo pipefail
if [[ $# -lt 1 || $# -gt 3 ]]; then
  sed -n '5,22p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$1" && pwd) || { echo "gpu-check: no build folder $1"; exit 2; }
cluster=${2:-$root/inputs/clusters/h100-sxm-8.yaml}
out=${3:-${OUT:-$build/gpu-check}}
[[ -f $cluster ]] || { echo "gpu-check: no cluster file $cluster"; exit 2; }
[[ -x $build/apps/mini5d ]] || { echo "gpu-check: no $build/apps/mini5d (build it first: docs/benchmarks.md, GPU check)"; exit 2; }
mkdir -p "$out"
if [[ -d $build/gpu-libs ]]; then
  export LD_LIBRARY_PATH="$build/gpu-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  [[ -d $build/gpu-libs/ucx ]] && export UCX_MODULE_DIR="$build/gpu-libs/ucx"
fi
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 OMP_PROC_BIND=false MINI5D_NO_BIND=1

# The tests find the decks through the source path compiled into them: where the build
# was made elsewhere, point that path at this checkout (a link, only if nothing is there).
src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt" 2>/dev/null)
if [[ -n $src && $src != "$root" && ! -e $src ]]; then
  mkdir -p "$(dirname "$src")" 2>/dev/null && ln -s "$root" "$src" 2>/dev/null ||
    echo "gpu-check: the tests look for the decks under $src, which this node lacks (unit tests that read decks will fail)"
fi

{ nvidia-smi -L 2>/dev/null || rocm-smi --showproductname 2>/dev/null || echo "no nvidia-smi or rocm-smi"; } | tee "$out/gpu.txt"
status=0

# 1. Unit tests, each binary once, as CTest runs them (one rank, no mpiexec: an MPI
#    program starts as a singleton). Binaries, not ctest: CTest's files name the paths
#    of the machine that built them.
pass=0 fail=0 failed=()
: >"$out/unit.log"
for t in "$build"/tests/unit/test_*; do
  [[ -x $t && -f $t ]] || continue
  if (cd "$out" && timeout 120 "$t" >>"$out/unit.log" 2>&1); then pass=$((pass + 1)); else fail=$((fail + 1)); failed+=("$(basename "$t")"); fi
done
echo "gpu-check: unit tests on the GPU: $pass passed, $fail failed${failed:+ (${failed[*]})} (log: $out/unit.log)"
((fail == 0)) || status=1

# 2. Throughput, kernel tables and the PyTorch anchor.
args=(--app "$build/apps/mini5d" --cluster "$cluster" --out "$out" --steps "${GPU_CHECK_STEPS:-12}"
      --peer-python "${GPU_CHECK_PYTHON:-python3}" --decks "${GPU_CHECK_DECKS:-gpt2-124m,llama-small}")
[[ ${GPU_CHECK_NO_PEER:-0} == 1 ]] && args+=(--no-peer)
python3 "$root/perf/gpu_check.py" "${args[@]}" || status=1
exit $status
