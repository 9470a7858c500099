#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The batch scripts run, not just parsed: each template in slurm/ and the planner's
# scripts for a node with hardware threads (Perlmutter-like, Cray MPICH) and for the
# 2-core test box run under bash with a fake srun, ldd, scontrol and mini5d on PATH and
# Slurm's job variables set as sbatch sets them. The fake srun records its arguments and
# the environment the ranks would get. Checked:
#  * OpenMP/BLAS threads = SLURM_CPUS_PER_TASK / threads per core (one per core), and
#    --cpus-per-task asks for cores x threads per core;
#  * srun takes the job's shape from SLURM_* variables and passes --mpi only when
#    SRUN_MPI names a plugin (the cluster file's value is the default, '' the site's);
#  * one GPU per task: --gpus-per-task=1 --gpu-bind=single:1 when srun binds;
#  * on AMD GCD nodes (Frontier, LUMI-G) 7 cores a rank, -c counting cores
#    (--threads-per-core=1), and the ROCm GTL library guarding the switch;
#  * Cray MPICH's MPICH_GPU_SUPPORT_ENABLED=1 only when the binary links the GTL library;
#  * an empty RESUME expands to nothing, written in the form bash < 4.4 accepts under
#    set -u; a checkpoint's `latest` adds resume=latest;
#  * MINI5D defaults to the installed mini5d on PATH, else ./build/apps/mini5d;
#  * the time-limit warning is sized from the model and the file system.
# Needs no Slurm.
# usage: script_run.sh WORKDIR PLAN REPO_ROOT
set -u
work=$1 plan=$2 root=$3
here=$(cd "$(dirname "$0")" && pwd)
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$work" && mkdir -p "$work/bin" "$work/installed" && cd "$work" || exit 1
in=$root/inputs

# Fakes. srun writes one line of arguments and the ranks' environment to srun.log.
cat > bin/srun <<'EOF'
#!/bin/bash
{ echo "args: $*"
  for v in OMP_NUM_THREADS OPENBLAS_NUM_THREADS OMP_PLACES OMP_PROC_BIND MINI5D_NO_BIND \
           MPICH_GPU_SUPPORT_ENABLED MPIR_CVAR_ENABLE_GPU CUDA_DEVICE_ORDER; do
    echo "env: $v=${!v-<unset>}"
  done; } > srun.log
EOF
# FAKE_GTL=1: the binary links Cray's CUDA GTL; FAKE_GTL=hsa: the ROCm one.
printf '#!/bin/bash\n[[ ${FAKE_GTL:-0} == 1 ]] && echo "\tlibmpi_gtl_cuda.so.0 => /opt/cray/pe/lib64/libmpi_gtl_cuda.so.0"\n[[ ${FAKE_GTL:-0} == hsa ]] && echo "\tlibmpi_gtl_hsa.so.0 => /opt/cray/pe/lib64/libmpi_gtl_hsa.so.0"\necho "\tlibc.so.6 => /lib/libc.so.6"\n' > bin/ldd
printf '#!/bin/bash\necho "scontrol $*" >> scontrol.log\n' > bin/scontrol
printf '#!/bin/bash\nexit 0\n' > installed/mini5d
chmod +x bin/* installed/mini5d

# run NAME SCRIPT [VAR=VALUE ...]: runs SCRIPT as sbatch would for 2 nodes.
run() {
  local name=$1 script=$2
  shift 2
  rm -f srun.log
  env -i PATH="$work/bin:/usr/bin:/bin" HOME="$work" DECK=plan.yaml MINI5D=./mini5d-under-test \
    SLURM_JOB_ID=42 SLURM_JOB_NUM_NODES=2 SLURM_NTASKS=$((2 * TASKS)) SLURM_NTASKS_PER_NODE=$TASKS \
    SLURM_CPUS_PER_TASK=$CPUS "$@" bash "$script" lr=1 > "$name.out" 2>&1 ||
    { cat "$name.out"; fail "$name: the script failed"; }
  [[ -f srun.log ]] || fail "$name: srun was not called"
  cp srun.log "$name.srun"
}
has() { grep -qF -- "$2" "$1.srun" || { cat "$1.srun"; fail "$1: srun did not get '$2'"; }; }
lacks() { grep -qF -- "$2" "$1.srun" && { cat "$1.srun"; fail "$1: srun got '$2'"; }; true; }

"$plan" --model "$in/gpt2-124m.yaml" --cluster "$in/clusters/perlmutter-a100-4.yaml" --nodes 2 \
  --emit-deck plan.yaml --emit-slurm perlmutter.sh > plan.out 2>&1 || { cat plan.out; fail "mini5d-plan perlmutter"; }
grep -q '^#SBATCH --cpus-per-task=32$' perlmutter.sh || fail "perlmutter: -c is not 16 cores x 2 threads"
grep -q -- '--hint' perlmutter.sh && fail "perlmutter: --hint conflicts with --cpu-bind and changes what -c counts"
grep -qF 'SRUN_MPI=${SRUN_MPI-cray_shasta}' perlmutter.sh || fail "perlmutter: slurm.mpi is not SRUN_MPI's default"

TASKS=4 CPUS=32
for s in perlmutter.sh "$root/slurm/gpu-4-per-node.sbatch"; do
  n=$(basename "$s")
  run "$n" "$s" FAKE_GTL=1
  has "$n" "env: OMP_NUM_THREADS=16"
  has "$n" "env: OPENBLAS_NUM_THREADS=16"
  has "$n" "env: MINI5D_NO_BIND=1"
  has "$n" "env: MPICH_GPU_SUPPORT_ENABLED=1"
  has "$n" "--ntasks=8 --ntasks-per-node=4 --cpus-per-task=32 --cpu-bind=cores"
  has "$n" "--gpus-per-task=1 --gpu-bind=single:1"
  has "$n" "./mini5d-under-test train plan.yaml parallel.ranks_per_node=4 checkpoint.dir=checkpoints"
  has "$n" "output.report=mini5d-report-42-0.json lr=1"
  lacks "$n" "resume="
  # Without the GTL library the switch stays off (Cray MPICH would abort in MPI_Init), said once.
  run "$n-nogtl" "$s" FAKE_GTL=0
  has "$n-nogtl" "env: MPICH_GPU_SUPPORT_ENABLED=<unset>"
  grep -q "does not link libmpi_gtl_cuda: MPICH_GPU_SUPPORT_ENABLED left unset" "$n-nogtl.out" ||
    fail "$n: no word that GPU-aware MPI is off"
done
has perlmutter.sh "args: --mpi=cray_shasta "
lacks gpu-4-per-node.sbatch "--mpi"  # the template leaves the plugin to the site
run pm-empty perlmutter.sh SRUN_MPI= FAKE_GTL=1
lacks pm-empty "--mpi"
run pm-pmix perlmutter.sh SRUN_MPI=pmix FAKE_GTL=1
has pm-pmix "args: --mpi=pmix "

# A checkpoint to resume from; the installed binary when MINI5D is not given.
mkdir -p checkpoints && touch checkpoints/latest
run resume perlmutter.sh FAKE_GTL=1
has resume "resume=latest lr=1"
rm -f srun.log
env -i PATH="$work/installed:$work/bin:/usr/bin:/bin" HOME="$work" DECK=plan.yaml SLURM_JOB_ID=42 SLURM_JOB_NUM_NODES=2 \
  SLURM_NTASKS=8 SLURM_NTASKS_PER_NODE=4 SLURM_CPUS_PER_TASK=32 bash perlmutter.sh > installed.out 2>&1 ||
  { cat installed.out; fail "installed: the script failed"; }
grep -qF "$work/installed/mini5d train plan.yaml" srun.log || { cat srun.log; fail "MINI5D did not default to the mini5d on PATH"; }
rm -rf checkpoints
# bash < 4.4 treats "${A[@]}" of an empty array as unset under set -u: the guarded form only.
for s in perlmutter.sh "$root"/slurm/*.sbatch; do
  grep -qF '"${RESUME[@]}" ' "$s" && ! grep -qF '${RESUME[@]+"${RESUME[@]}"}' "$s" && fail "$s: bare \"\${RESUME[@]}\""
  grep -qF '${RESUME[@]+"${RESUME[@]}"}' "$s" || fail "$s: RESUME not in the form bash < 4.4 accepts"
done

# The warning before the limit: a step + the checkpoint at the file system's rate + 60 s.
# gpt2-124m (its head not tied to the embedding): 163 M parameters x 12 bytes = 1.96 GB
# at min(2 nodes x 10, 5000) GB/s.
margin=$(sed -n 's/^#SBATCH --signal=USR1@\([0-9]*\)$/\1/p' perlmutter.sh)
grep -q '^# time-limit warning .* saving 1.96 GB at 20.0 GB/s' perlmutter.sh ||
  { grep '^# time-limit' perlmutter.sh; fail "perlmutter: the margin's reason is not the checkpoint at 20 GB/s"; }
[[ $margin -ge 70 && $margin -le 120 ]] || fail "perlmutter: --signal=USR1@$margin, expected a step + 0.1 s + 60 s, rounded up"

TASKS=8 CPUS=28
run gpu-8 "$root/slurm/gpu-8-per-node.sbatch"
has gpu-8 "env: OMP_NUM_THREADS=14"
has gpu-8 "env: MPIR_CVAR_ENABLE_GPU=1"
has gpu-8 "--ntasks-per-node=8 --cpus-per-task=28"

# HPE Cray EX with AMD GPUs (test fixture of a Frontier/LUMI-G node): 7 cores a rank of
# the 56 the site leaves, -c counting cores (--threads-per-core=1), one GCD each, Cray
# MPICH's switch only when the ROCm GTL library is linked.
"$plan" --model "$in/gpt2-124m.yaml" --cluster "$here/clusters/amd-8-gcd.yaml" --nodes 2 \
  --emit-deck plan.yaml --emit-slurm amd.sh > plan.out 2>&1 || { cat plan.out; fail "mini5d-plan amd-8-gcd"; }
TASKS=8 CPUS=7
for s in amd.sh "$root/slurm/amd-8-gcd-per-node.sbatch"; do
  n=$(basename "$s")
  run "$n" "$s" FAKE_GTL=hsa
  has "$n" "env: OMP_NUM_THREADS=7"
  has "$n" "env: MINI5D_NO_BIND=1"
  has "$n" "env: MPICH_GPU_SUPPORT_ENABLED=1"
  has "$n" "--ntasks=16 --ntasks-per-node=8 --cpus-per-task=7 --threads-per-core=1 --cpu-bind=cores --distribution=block:block"
  has "$n" "--gpus-per-task=1 --gpu-bind=single:1"
  has "$n" "./mini5d-under-test train plan.yaml parallel.ranks_per_node=8 checkpoint.dir=checkpoints"
  # The CUDA GTL is not the ROCm one: the switch stays off, said once.
  run "$n-nogtl" "$s" FAKE_GTL=1
  has "$n-nogtl" "env: MPICH_GPU_SUPPORT_ENABLED=<unset>"
  grep -q "does not link libmpi_gtl_hsa: MPICH_GPU_SUPPORT_ENABLED left unset" "$n-nogtl.out" ||
    fail "$n: no word that GPU-aware MPI is off"
done
has amd.sh "args: --mpi=cray_shasta "
lacks amd-8-gcd-per-node.sbatch "--mpi"

# The 2-core box: no hardware threads, mini5d binds (the test Slurm has no task plugin).
"$plan" --model "$in/tiny.yaml" --cluster "$in/clusters/cpu-2core.yaml" --global-batch 16 \
  --emit-deck plan.yaml --emit-slurm cpu.sh > plan.out 2>&1 || { cat plan.out; fail "mini5d-plan cpu-2core"; }
TASKS=2 CPUS=1
run cpu cpu.sh
has cpu "env: OMP_NUM_THREADS=1"
has cpu "env: MINI5D_NO_BIND=0"
has cpu "args: --mpi=pmi2 --nodes=2 --ntasks=4 --ntasks-per-node=2 --cpus-per-task=1 --cpu-bind=none"
lacks cpu "gpu"
TASKS=8 CPUS=32
run cpu-template "$root/slurm/cpu-node.sbatch"
has cpu-template "env: OMP_NUM_THREADS=16"
lacks cpu-template "gpu"
echo "ok: the scripts run with a fake srun: threads per core, Slurm's shape, --mpi only when set, one GPU per task, GTL-gated switch, resume, installed binary, sized warning"
