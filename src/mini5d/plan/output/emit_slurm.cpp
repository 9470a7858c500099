// SPDX-License-Identifier: BSD-3-Clause
// Slurm script writer. Everything user-tunable (binary, deck, checkpoint directory,
// report) is an environment variable with a default, so the script runs as written;
// site values (partition, account, MPI plugin, GPU-aware MPI switch) come from the
// cluster description and are checked before they reach the script.
#include "mini5d/plan/output/emit_slurm.hpp"

#include <algorithm>
#include <cctype>

#include "mini5d/plan/output/format.hpp"
#include "mini5d/plan/inputs/input_files.hpp"
#include "mini5d/plan/output/goodput_plan.hpp"
#include "mini5d/plan/inputs/slurm_fields.hpp"
#include "mini5d/plan/output/signal_margin.hpp"

namespace mini5d::plan {

namespace {
// Single-quoted for the shell.
std::string quoted(const std::string& s) {
  std::string o = "'";
  for (char ch : s) o += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return o + "'";
}
std::string job_name(const std::string& s) {
  std::string o;
  for (char ch : s)
    o += (std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_' || ch == '.') ? ch : '_';
  return o.empty() ? "plan" : o;
}

// The GPU-aware MPI switch of the site (slurm.gpu_aware_env), guarded by its transport
// library (slurm.gpu_aware_lib) when the file names one.
void write_gpu_aware_switch(std::ostream& os, const ClusterDesc& cl) {
  if (cl.slurm_gpu_aware_env.empty()) {
    os << "# No GPU-aware MPI switch for this site: mini5d asks the library (parallel.gpu_aware_mpi=auto).\n";
  } else if (cl.slurm_gpu_aware_lib.empty()) {
    os << "export " << cl.slurm_gpu_aware_env << "  # GPU-aware MPI: ranks hand MPI device pointers\n";
  } else {
    // Cray MPICH aborts in MPI_Init when the switch is on and its GPU transport
    // library is not linked: turn it on only for a binary that links it.
    const std::string name = cl.slurm_gpu_aware_env.substr(0, cl.slurm_gpu_aware_env.find('='));
    os << "if [[ $(ldd \"$MINI5D\" 2>/dev/null) == *" << cl.slurm_gpu_aware_lib << "* ]]; then\n";
    os << "  export " << cl.slurm_gpu_aware_env << "  # GPU-aware MPI: ranks hand MPI device pointers\n";
    os << "else\n";
    os << "  echo \"mini5d: $MINI5D does not link " << cl.slurm_gpu_aware_lib << ": " << name
       << " left unset, MPI messages staged through host memory\" >&2\n";
    os << "fi\n";
  }
}
}  // namespace

void write_slurm(std::ostream& os, const ModelDesc& m, const ClusterDesc& cl, const Plan& p,
                 const std::string& deck_path) {
  validate_slurm(cl);
  const Layout& l = p.layout;
  const long long per_node = cl.devices_per_node;
  const long long nodes = (l.ranks() + per_node - 1) / per_node;
  // A plan smaller than a node, or not a whole number of nodes, asks for exactly its
  // ranks: --ntasks rules and --ntasks-per-node is then the most per node (Slurm fills
  // the nodes in order, so the last one holds the rest). Whole nodes need no --ntasks,
  // so editing --nodes alone scales the script.
  const long long tasks_per_node = std::min(per_node, l.ranks());
  const bool whole_nodes = l.ranks() % per_node == 0;
  // The cores jobs may have (the site keeps slurm.reserved_cores), shared evenly.
  const long long cores = std::max<long long>(1, (cl.cores_per_node - cl.slurm_reserved_cores) / per_node);
  const long long tpc = cl.task_threads_per_core();
  const long long cpus = cores * tpc;  // Slurm's CPUs are hardware threads
  // --threads-per-core when the file says it: Slurm's -c then counts that many per core
  // whatever the site's default (Frontier's is 1, Perlmutter's 2).
  const bool say_tpc = cl.slurm_threads_per_core > 0;
  const bool gpu = cl.device.kind == "gpu";
  const bool srun_binds = cl.slurm_binding == "srun";
  const SignalMargin margin = signal_margin(m, cl, p.time.step, nodes);
  os << "#!/bin/bash\n";
  os << "# mini5d on " << cl.name << " for " << m.name << ", written by mini5d-plan.\n";
  os << "# plan: " << describe(l) << "\n";
  os << "# rank order [d,p,c,e,t], t fastest: each node holds " << per_node
     << " consecutive ranks, so a tensor group of " << l.t << " never leaves a node.\n";
  os << "# predicted: step " << ms(p.time.step) << ", " << gib(p.memory.total())
     << "/device, MFU " << pct(p.time.mfu) << "\n";
  os << "# time-limit warning " << margin.seconds << " s ahead: " << margin.why << "\n";
  // The checkpoint interval the goodput model picks, passed on the command line so that
  // the deck's own checkpoint.every never disagrees with this script.
  const PlanGoodput good = plan_goodput(m, cl, p);
  const std::string every = good.available ? " checkpoint.every=" + std::to_string(good.interval_steps) : "";
  if (good.available)
    os << "# checkpoint every " << good.interval_steps << " steps, predicted ETTR " << pct(good.ettr)
       << " (mini5d-plan --explain gives the inputs)\n";
  os << "#SBATCH --job-name=mini5d-" << job_name(m.name) << "\n";
  os << "#SBATCH --nodes=" << nodes << "\n";
  if (!whole_nodes) os << "#SBATCH --ntasks=" << l.ranks() << "\n";
  os << "#SBATCH --ntasks-per-node=" << tasks_per_node << "\n";
  os << "#SBATCH --cpus-per-task=" << cpus << "\n";
  if (say_tpc) os << "#SBATCH --threads-per-core=" << tpc << "\n";
  if (gpu) os << "#SBATCH --gpus-per-task=1\n";
  os << "#SBATCH --exclusive\n";
  os << "#SBATCH --time=" << cl.slurm_time << "\n";
  // SIGUSR1 to every rank before the limit: mini5d finishes its step, saves a
  // checkpoint and exits cleanly; the script then requeues the job.
  os << "#SBATCH --signal=USR1@" << margin.seconds << "\n";
  os << "#SBATCH --requeue\n";
  os << "#SBATCH --open-mode=append\n";
  if (!cl.slurm_partition.empty()) os << "#SBATCH --partition=" << cl.slurm_partition << "\n";
  if (!cl.slurm_account.empty()) os << "#SBATCH --account=" << cl.slurm_account << "\n";
  if (!cl.slurm_qos.empty()) os << "#SBATCH --qos=" << cl.slurm_qos << "\n";
  if (!cl.slurm_constraint.empty()) os << "#SBATCH --constraint=" << quoted(cl.slurm_constraint) << "\n";
  if (!cl.slurm_gres.empty()) os << "#SBATCH --gres=" << cl.slurm_gres << "\n";
  os << "set -euo pipefail\n\n";
  os << "MINI5D=${MINI5D:-$(command -v mini5d || echo ./build/apps/mini5d)}\n";
  os << "DECK=${DECK:-" << quoted(deck_path) << "}\n";
  os << "CKPT_DIR=${CKPT_DIR:-checkpoints}\n";
  os << "REPORT=${REPORT:-mini5d-report-${SLURM_JOB_ID:-0}-${SLURM_RESTART_COUNT:-0}.json}\n";
  os << "THREADS_PER_CORE=${THREADS_PER_CORE:-" << tpc << "}\n";
  os << "SRUN_MPI=${SRUN_MPI-" << cl.slurm_mpi << "}  # empty: the site's default PMI\n\n";
  os << "# One rank per " << (gpu ? "GPU" : "core group") << ", " << cores << " cores each"
     << (tpc > 1 ? " (" + std::to_string(cpus) + " hardware threads)" : std::string())
     << (cl.slurm_reserved_cores > 0
             ? " of the " + std::to_string(cl.cores_per_node - cl.slurm_reserved_cores) + " the site leaves (it keeps " +
                   std::to_string(cl.slurm_reserved_cores) + ")"
             : std::string())
     << "; one OpenMP and BLAS thread per core.\n";
  os << "export OMP_NUM_THREADS=$((SLURM_CPUS_PER_TASK / THREADS_PER_CORE))\n";
  os << "export OPENBLAS_NUM_THREADS=$OMP_NUM_THREADS\n";
  os << "export OMP_PLACES=cores\n";
  os << "export OMP_PROC_BIND=close\n";
  if (srun_binds)
    os << "export MINI5D_NO_BIND=1  # srun pins each task (--cpu-bind" << (gpu ? ", --gpu-bind: one GPU each" : "")
       << "); mini5d keeps it\n";
  else
    os << "export MINI5D_NO_BIND=0  # srun pins nothing (--cpu-bind=none); mini5d pins each rank with hwloc\n";
  if (gpu && !srun_binds)
    os << "export CUDA_DEVICE_ORDER=PCI_BUS_ID  # every GPU visible, numbered as hwloc sees them; mini5d picks the nearest\n";
  if (gpu) write_gpu_aware_switch(os, cl);
  os << "\n# Resume from the newest checkpoint when there is one. Arguments to the script\n"
        "# (sbatch SCRIPT section.field=value ...) override the deck.\n";
  os << "RESUME=()\n";
  os << "if [[ -f $CKPT_DIR/latest ]]; then RESUME=(resume=latest); fi\n\n";
  os << "# The job's shape from Slurm's variables (srun >= 22.05 does not inherit -c, so it is\n"
        "# passed again); --mpi only when SRUN_MPI names a plugin.\n";
  os << "srun ${SRUN_MPI:+--mpi=$SRUN_MPI} --nodes=$SLURM_JOB_NUM_NODES --ntasks=$SLURM_NTASKS"
        " --ntasks-per-node=$SLURM_NTASKS_PER_NODE --cpus-per-task=$SLURM_CPUS_PER_TASK"
     << (say_tpc ? " --threads-per-core=$THREADS_PER_CORE" : "") << " --cpu-bind="
     << (srun_binds ? "cores" : "none") << " --distribution=block:block";
  if (gpu) os << " --gpus-per-task=1 --gpu-bind=" << (srun_binds ? cl.slurm_gpu_bind : std::string("none"));
  os << " \\\n  \"$MINI5D\" train \"$DECK\" parallel.ranks_per_node=$SLURM_NTASKS_PER_NODE"
        " checkpoint.dir=\"$CKPT_DIR\""
     << every << " output.report=\"$REPORT\" ${RESUME[@]+\"${RESUME[@]}\"} \"$@\"\n\n";
  os << "# Stopped by the time-limit warning (checkpoint saved): back into the queue; the\n"
        "# next start resumes from latest. A finished run or scancel (SIGTERM) does not requeue.\n";
  os << "if grep -q \"\\\"stopped_by_signal\\\": $(kill -l USR1),\" \"$REPORT\"; then\n";
  os << "  scontrol requeue \"$SLURM_JOB_ID\"\n";
  os << "fi\n";
}

}  // namespace mini5d::plan
