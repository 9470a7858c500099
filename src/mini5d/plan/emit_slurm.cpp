// SPDX-License-Identifier: BSD-3-Clause
// Slurm script writer. Everything user-tunable (binary, deck, time limit) is an
// environment variable with a default, so the script runs as written.
#include "mini5d/plan/emit_slurm.hpp"

#include <algorithm>
#include <cctype>

#include "mini5d/plan/format.hpp"

namespace mini5d::plan {

namespace {
std::string safe_name(const std::string& s) {
  std::string o;
  for (char ch : s)
    o += (std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_' || ch == '.')
             ? ch
             : '_';
  return o.empty() ? "plan" : o;
}
// Single-quoted for the shell.
std::string quoted(const std::string& s) {
  std::string o = "'";
  for (char ch : s) o += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return o + "'";
}
}  // namespace

void write_slurm(std::ostream& os, const ModelDesc& m, const ClusterDesc& cl, const Plan& p,
                 const std::string& deck_path) {
  const Layout& l = p.layout;
  const long long per_node = cl.devices_per_node;
  const long long nodes = (l.ranks() + per_node - 1) / per_node;
  const long long cpus = std::max<long long>(1, cl.cores_per_node / per_node);
  const bool gpu = cl.device.kind == "gpu";
  os << "#!/bin/bash\n";
  os << "# mini5d on " << cl.name << " for " << m.name << ", written by mini5d-plan.\n";
  os << "# plan: " << describe(l) << "\n";
  os << "# rank order [d,p,c,e,t], t fastest: each node holds " << per_node
     << " consecutive ranks, so a tensor group of " << l.t << " never leaves a node.\n";
  os << "# predicted: step " << ms(p.time.step) << ", " << gib(p.memory.total())
     << "/device, MFU " << pct(p.time.mfu) << "\n";
  os << "#SBATCH --job-name=mini5d-" << safe_name(m.name) << "\n";
  os << "#SBATCH --nodes=" << nodes << "\n";
  os << "#SBATCH --ntasks-per-node=" << per_node << "\n";
  os << "#SBATCH --cpus-per-task=" << cpus << "\n";
  if (gpu) os << "#SBATCH --gpus-per-task=1\n";
  os << "#SBATCH --exclusive\n";
  os << "#SBATCH --time=01:00:00\n";
  // SIGUSR1 to every rank two minutes before the limit: mini5d finishes its step,
  // saves a checkpoint and exits cleanly; resubmitting the script resumes from it.
  os << "#SBATCH --signal=USR1@120\n";
  if (!cl.slurm_partition.empty()) os << "#SBATCH --partition=" << safe_name(cl.slurm_partition) << "\n";
  if (!cl.slurm_account.empty()) os << "#SBATCH --account=" << safe_name(cl.slurm_account) << "\n";
  os << "set -euo pipefail\n\n";
  os << "MINI5D=${MINI5D:-./build/apps/mini5d}\n";
  os << "DECK=${DECK:-" << quoted(deck_path) << "}\n\n";
  os << "# One rank per " << (gpu ? "GPU" : "core group") << ", " << cpus
     << " cores each; BLAS and OpenMP threads match the cores a rank owns.\n";
  os << "export OMP_NUM_THREADS=" << cpus << "\n";
  os << "export OPENBLAS_NUM_THREADS=" << cpus << "\n";
  os << "export OMP_PLACES=cores\n";
  os << "export OMP_PROC_BIND=close\n";
  os << "export MINI5D_NO_BIND=1  # srun binds each task (--cpu-bind); mini5d keeps it\n\n";
  os << "# Resume from the newest checkpoint when there is one (checkpoint.dir of the deck).\n";
  os << "RESUME=()\n";
  os << "if [[ -f checkpoints/latest ]]; then RESUME=(resume=latest); fi\n\n";
  os << "srun --nodes=" << nodes << " --ntasks=" << l.ranks() << " --ntasks-per-node=" << per_node
     << " --cpus-per-task=" << cpus << " --cpu-bind=cores --distribution=block:block";
  if (gpu) os << " --gpus-per-task=1 --gpu-bind=" << safe_name(cl.slurm_gpu_bind);
  os << " \\\n  \"$MINI5D\" train \"$DECK\" parallel.ranks_per_node=" << per_node << " \"${RESUME[@]}\"\n";
}

}  // namespace mini5d::plan
