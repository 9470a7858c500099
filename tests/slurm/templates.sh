#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Each template in slurm/ passes bash -n and has the shape of what
# mini5d-plan --emit-slurm writes for the matching cluster; site values (account,
# partition, MPI plugin) reach the script from the cluster file or the flags, and a
# bad one is refused naming the field. Needs no Slurm.
# usage: templates.sh WORKDIR PLAN REPO_ROOT
set -u
work=$1 plan=$2 root=$3
here=$(cd "$(dirname "$0")" && pwd)
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
in=$root/inputs
check() {  # check TEMPLATE CLUSTER MODEL [flags]; CLUSTER: a file in inputs/clusters, or a path
  local t=$1 cl=$2 model=$3
  shift 3
  [[ $cl == */* ]] || cl=$in/clusters/$cl
  bash -n "$root/slurm/$t" || fail "bash -n slurm/$t"
  "$plan" --model "$in/$model" --cluster "$cl" --emit-deck plan.yaml --emit-slurm "$t.emitted" "$@" \
    > plan.out 2>&1 || { cat plan.out; fail "mini5d-plan for $cl"; }
  python3 "$here/template_shape.py" "$root/slurm/$t" "$t.emitted" || exit 1
}
check gpu-4-per-node.sbatch perlmutter-a100-4.yaml gpt2-124m.yaml --nodes 1
check gpu-8-per-node.sbatch h200-8.yaml gpt2-124m.yaml --nodes 1
check cpu-node.sbatch cpu-2core.yaml tiny.yaml --global-batch 16
# HPE Cray EX with AMD GPUs (Frontier, LUMI-G): a test fixture of the node, not a planning input.
check amd-8-gcd-per-node.sbatch "$here/clusters/amd-8-gcd.yaml" gpt2-124m.yaml --nodes 1
for re in '^#SBATCH --cpus-per-task=7$' '^#SBATCH --threads-per-core=1$' '^THREADS_PER_CORE=\${THREADS_PER_CORE:-1}$' \
  ' --cpus-per-task=\$SLURM_CPUS_PER_TASK --threads-per-core=\$THREADS_PER_CORE --cpu-bind=cores ' \
  '^if \[\[ \$(ldd "\$MINI5D" 2>/dev/null) == \*libmpi_gtl_hsa\* \]\]; then$'; do
  grep -q -- "$re" amd-8-gcd-per-node.sbatch.emitted || fail "amd: the emitted script lacks '$re'"
done
grep -q -- '--threads-per-core' gpu-4-per-node.sbatch.emitted && fail "perlmutter: --threads-per-core without slurm.threads_per_core"
# Site values: from the cluster file ...
grep -qF 'SRUN_MPI=${SRUN_MPI-cray_shasta}' gpu-4-per-node.sbatch.emitted || fail "perlmutter: slurm.mpi not SRUN_MPI's default"
grep -q '^  export MPICH_GPU_SUPPORT_ENABLED=1 ' gpu-4-per-node.sbatch.emitted || fail "perlmutter: slurm.gpu_aware_env not exported"
grep -qF 'if [[ $(ldd "$MINI5D" 2>/dev/null) == *libmpi_gtl_cuda* ]]; then' gpu-4-per-node.sbatch.emitted ||
  fail "perlmutter: the GPU-aware switch is not guarded by slurm.gpu_aware_lib"
grep -q 'account\|partition' gpu-8-per-node.sbatch.emitted && fail "h200: account/partition without a site value"
# ... or the flags, which win.
"$plan" --model "$in/gpt2-124m.yaml" --cluster "$in/clusters/h200-8.yaml" --nodes 1 --emit-slurm flags.sh \
  --slurm-account m1234 --slurm-partition gpu_h200 --slurm-mpi pmi2 > plan.out 2>&1 || { cat plan.out; fail "--slurm-* flags"; }
for re in '^#SBATCH --account=m1234$' '^#SBATCH --partition=gpu_h200$' '^SRUN_MPI=\${SRUN_MPI-pmi2}'; do
  grep -q -- "$re" flags.sh || fail "flags.sh lacks '$re'"
done
python3 "$here/template_shape.py" "$root/slurm/gpu-8-per-node.sbatch" flags.sh > /dev/null &&
  fail "the shape check did not notice the extra account/partition lines"
# Bad site values: exit 2, one line naming the field.
"$plan" --model "$in/tiny.yaml" --cluster "$in/clusters/cpu-2core.yaml" --slurm-mpi openmpi > bad.out 2>&1
[[ $? -eq 2 ]] && grep -q "slurm.mpi: 'openmpi' is not valid (valid: pmi2, pmix" bad.out || { cat bad.out; fail "--slurm-mpi openmpi not refused"; }
"$plan" --model "$in/tiny.yaml" --cluster "$in/clusters/cpu-2core.yaml" --slurm-account 'a;rm' > bad.out 2>&1
[[ $? -eq 2 ]] && grep -q "slurm.account: 'a;rm' is not valid" bad.out || { cat bad.out; fail "--slurm-account 'a;rm' not refused"; }
# QOS, constraint and generic resources from the cluster file's slurm: section.
sed 's/^slurm:$/slurm:\n  qos: regular\n  constraint: gpu\&hbm80g\n  gres: nvme:1/' "$in/clusters/perlmutter-a100-4.yaml" > site.yaml
"$plan" --model "$in/gpt2-124m.yaml" --cluster site.yaml --nodes 1 --emit-slurm site.sh > plan.out 2>&1 ||
  { cat plan.out; fail "qos/constraint/gres"; }
for re in '^#SBATCH --qos=regular$' "^#SBATCH --constraint='gpu&hbm80g'$" '^#SBATCH --gres=nvme:1$'; do
  grep -q -- "$re" site.sh || fail "site.sh lacks '$re'"
done
# Refused, one line naming the field: a GPU binding that shows a task several GPUs while
# srun binds, a library guard without its switch, a limit shorter than the warning.
bad_cluster() {  # bad_cluster SED_EXPR EXPECTED
  sed "$1" "$in/clusters/perlmutter-a100-4.yaml" > bad.yaml
  "$plan" --model "$in/gpt2-124m.yaml" --cluster bad.yaml --nodes 1 --emit-slurm bad.sh > bad.out 2>&1
  [[ $? -eq 2 && $(wc -l < bad.out) -eq 1 ]] && grep -qF -- "$2" bad.out || { cat bad.out; fail "not refused: $1"; }
}
bad_cluster 's/^slurm:$/slurm:\n  gpu_bind: closest/' "slurm.gpu_bind: 'closest' is not valid (valid: with slurm.binding: srun, one GPU per task"
bad_cluster 's/^slurm:$/slurm:\n  gpu_bind: none/' "slurm.gpu_bind: 'none' is not valid"
bad_cluster '/gpu_aware_env:/d' "slurm.gpu_aware_lib: 'libmpi_gtl_cuda' given without slurm.gpu_aware_env"
bad_cluster 's/^slurm:$/slurm:\n  reserved_cores: 64/' "slurm.reserved_cores: 64 is not valid (valid: fewer than cores_per_node, 64)"
bad_cluster 's/^slurm:$/slurm:\n  threads_per_core: 4/' "slurm.threads_per_core: 4 is not valid (valid: 1 to threads_per_core, 2)"
bad_cluster 's/^slurm:$/slurm:\n  time: "00:01:00"/' "slurm.time: '00:01:00' is not valid (valid: longer than 60 s"
# A limit that holds the exit but not this plan's step and checkpoint: found once the
# plan is known, after its table; the last line says why.
sed 's/^slurm:$/slurm:\n  time: "00:01:05"/' "$in/clusters/perlmutter-a100-4.yaml" > bad.yaml
"$plan" --model "$in/gpt2-124m.yaml" --cluster bad.yaml --nodes 1 --emit-slurm bad.sh > bad.out 2>&1
[[ $? -eq 2 ]] && tail -n 1 bad.out | grep -qF "slurm.time: '00:01:05' (65 s) leaves no time to train before the checkpoint warning" ||
  { cat bad.out; fail "a limit shorter than the plan's warning not refused"; }
[[ -e bad.sh ]] && fail "bad.sh written although its limit was refused"
echo "ok: templates (GPU x4, x8, AMD GCD x8, CPU) match the planner's scripts; site values from file and flags; bad ones refused"
