// SPDX-License-Identifier: BSD-3-Clause
// Slurm script writer. Everything user-tunable (binary, deck, checkpoint directory,
// report) is an environment variable with a default, so the script runs as written;
// site values (partition, account, MPI plugin, GPU-aware MPI switch) come from the
// cluster description and are checked before they reach the script.
#include "mini5d/plan/emit_slurm.hpp"

#include <algorithm>
#include <cctype>
#include <regex>

#include "mini5d/plan/format.hpp"
#include "mini5d/plan/input_files.hpp"

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
void check(const ClusterDesc& cl, const std::string& field, const std::string& v, const char* re,
           const std::string& valid) {
  if (!std::regex_match(v, std::regex(re)))
    throw InputError(cl.source + ": slurm." + field + ": '" + v + "' is not valid (valid: " + valid + ")");
}
}  // namespace

void validate_slurm(const ClusterDesc& cl) {
  check(cl, "partition", cl.slurm_partition, "[A-Za-z0-9_.,-]*", "a Slurm partition name, or empty");
  check(cl, "account", cl.slurm_account, "[A-Za-z0-9_.-]*", "a Slurm account name, or empty");
  check(cl, "mpi", cl.slurm_mpi, "|pmi2|pmix|pmix_v[0-9]|cray_shasta|none",
        "pmi2, pmix, pmix_vN, cray_shasta, none, or empty for the site default");
  check(cl, "binding", cl.slurm_binding, "srun|mini5d", "srun, mini5d");
  check(cl, "gpu_bind", cl.slurm_gpu_bind, "[a-z_]+(:[0-9a-zA-Z,]+)?", "closest, none, map_gpu:..., ...");
  check(cl, "gpu_aware_env", cl.slurm_gpu_aware_env, "([A-Za-z_][A-Za-z0-9_]*=[A-Za-z0-9_.:-]*)?",
        "NAME=VALUE, e.g. MPICH_GPU_SUPPORT_ENABLED=1, or empty");
  check(cl, "time", cl.slurm_time, "([0-9]+-)?[0-9]{1,2}:[0-9]{2}:[0-9]{2}|[0-9]+",
        "HH:MM:SS, D-HH:MM:SS or minutes");
}

void write_slurm(std::ostream& os, const ModelDesc& m, const ClusterDesc& cl, const Plan& p,
                 const std::string& deck_path) {
  validate_slurm(cl);
  const Layout& l = p.layout;
  const long long per_node = cl.devices_per_node;
  const long long nodes = (l.ranks() + per_node - 1) / per_node;
  const long long cpus = std::max<long long>(1, cl.cores_per_node / per_node);
  const bool gpu = cl.device.kind == "gpu";
  const bool srun_binds = cl.slurm_binding == "srun";
  os << "#!/bin/bash\n";
  os << "# mini5d on " << cl.name << " for " << m.name << ", written by mini5d-plan.\n";
  os << "# plan: " << describe(l) << "\n";
  os << "# rank order [d,p,c,e,t], t fastest: each node holds " << per_node
     << " consecutive ranks, so a tensor group of " << l.t << " never leaves a node.\n";
  os << "# predicted: step " << ms(p.time.step) << ", " << gib(p.memory.total())
     << "/device, MFU " << pct(p.time.mfu) << "\n";
  os << "#SBATCH --job-name=mini5d-" << job_name(m.name) << "\n";
  os << "#SBATCH --nodes=" << nodes << "\n";
  os << "#SBATCH --ntasks-per-node=" << per_node << "\n";
  os << "#SBATCH --cpus-per-task=" << cpus << "\n";
  if (gpu) os << "#SBATCH --gpus-per-task=1\n";
  os << "#SBATCH --exclusive\n";
  os << "#SBATCH --time=" << cl.slurm_time << "\n";
  // SIGUSR1 to every rank two minutes before the limit: mini5d finishes its step,
  // saves a checkpoint and exits cleanly; the script then requeues the job.
  os << "#SBATCH --signal=USR1@120\n";
  os << "#SBATCH --requeue\n";
  os << "#SBATCH --open-mode=append\n";
  if (!cl.slurm_partition.empty()) os << "#SBATCH --partition=" << cl.slurm_partition << "\n";
  if (!cl.slurm_account.empty()) os << "#SBATCH --account=" << cl.slurm_account << "\n";
  os << "set -euo pipefail\n\n";
  os << "MINI5D=${MINI5D:-./build/apps/mini5d}\n";
  os << "DECK=${DECK:-" << quoted(deck_path) << "}\n";
  os << "CKPT_DIR=${CKPT_DIR:-checkpoints}\n";
  os << "REPORT=${REPORT:-mini5d-report-${SLURM_JOB_ID:-0}-${SLURM_RESTART_COUNT:-0}.json}\n\n";
  os << "# One rank per " << (gpu ? "GPU" : "core group") << ", " << cpus
     << " cores each; BLAS and OpenMP threads match the cores a rank owns.\n";
  os << "export OMP_NUM_THREADS=" << cpus << "\n";
  os << "export OPENBLAS_NUM_THREADS=" << cpus << "\n";
  os << "export OMP_PLACES=cores\n";
  os << "export OMP_PROC_BIND=close\n";
  if (srun_binds)
    os << "export MINI5D_NO_BIND=1  # srun pins each task (--cpu-bind" << (gpu ? ", --gpu-bind" : "")
       << "); mini5d keeps it\n";
  else
    os << "export MINI5D_NO_BIND=0  # srun pins nothing (--cpu-bind=none); mini5d pins each rank with hwloc\n";
  if (gpu) {
    if (!cl.slurm_gpu_aware_env.empty())
      os << "export " << cl.slurm_gpu_aware_env << "  # GPU-aware MPI: ranks hand MPI device pointers\n";
    else
      os << "# No GPU-aware MPI switch for this site: mini5d asks the library (parallel.gpu_aware_mpi=auto).\n";
  }
  os << "\n# Resume from the newest checkpoint when there is one. Arguments to the script\n"
        "# (sbatch SCRIPT section.field=value ...) override the deck.\n";
  os << "RESUME=()\n";
  os << "if [[ -f $CKPT_DIR/latest ]]; then RESUME=(resume=latest); fi\n\n";
  os << "srun";
  if (!cl.slurm_mpi.empty()) os << " --mpi=" << cl.slurm_mpi;
  os << " --nodes=" << nodes << " --ntasks=" << l.ranks() << " --ntasks-per-node=" << per_node
     << " --cpus-per-task=" << cpus << " --cpu-bind=" << (srun_binds ? "cores" : "none")
     << " --distribution=block:block";
  if (gpu) os << " --gpus-per-task=1" << (srun_binds ? " --gpu-bind=" + cl.slurm_gpu_bind : std::string());
  os << " \\\n  \"$MINI5D\" train \"$DECK\" parallel.ranks_per_node=" << per_node
     << " checkpoint.dir=\"$CKPT_DIR\" output.report=\"$REPORT\" \"${RESUME[@]}\" \"$@\"\n\n";
  os << "# Stopped by the time-limit warning (checkpoint saved): back into the queue; the\n"
        "# next start resumes from latest. A finished run or scancel (SIGTERM) does not requeue.\n";
  os << "if grep -q \"\\\"stopped_by_signal\\\": $(kill -l USR1),\" \"$REPORT\"; then\n";
  os << "  scontrol requeue \"$SLURM_JOB_ID\"\n";
  os << "fi\n";
}

}  // namespace mini5d::plan
