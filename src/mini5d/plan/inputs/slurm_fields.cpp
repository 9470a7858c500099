// SPDX-License-Identifier: BSD-3-Clause
// The checks of the cluster's Slurm values (see slurm_fields.hpp).
#include "mini5d/plan/inputs/slurm_fields.hpp"

#include <regex>

#include "mini5d/plan/inputs/input_files.hpp"

namespace mini5d::plan {

namespace {
void check(const ClusterDesc& cl, const std::string& field, const std::string& v, const char* re,
           const std::string& valid) {
  if (!std::regex_match(v, std::regex(re)))
    throw InputError(cl.source + ": slurm." + field + ": '" + v + "' is not valid (valid: " + valid + ")");
}
}  // namespace

long long slurm_time_seconds(const std::string& t) {
  if (t.find(':') == std::string::npos) return std::stoll(t) * 60;  // minutes
  long long days = 0;
  std::string hms = t;
  if (const auto dash = t.find('-'); dash != std::string::npos) {
    days = std::stoll(t.substr(0, dash));
    hms = t.substr(dash + 1);
  }
  const long long h = std::stoll(hms.substr(0, hms.find(':')));
  const long long mnt = std::stoll(hms.substr(hms.find(':') + 1, 2));
  const long long s = std::stoll(hms.substr(hms.rfind(':') + 1));
  return ((days * 24 + h) * 60 + mnt) * 60 + s;
}

void validate_slurm(const ClusterDesc& cl) {
  check(cl, "partition", cl.slurm_partition, "[A-Za-z0-9_.,-]*", "a Slurm partition name, or empty");
  check(cl, "account", cl.slurm_account, "[A-Za-z0-9_.-]*", "a Slurm account name, or empty");
  check(cl, "qos", cl.slurm_qos, "[A-Za-z0-9_.-]*", "a Slurm QOS name, or empty");
  check(cl, "constraint", cl.slurm_constraint, "[A-Za-z0-9_.,&|*:()\\[\\]-]*",
        "node features joined by & | , [ ] ( ) *, e.g. gpu&hbm80g, or empty");
  check(cl, "gres", cl.slurm_gres, "[A-Za-z0-9_.:,-]*", "NAME[:TYPE]:COUNT[,...], e.g. nvme:1, or empty");
  check(cl, "mpi", cl.slurm_mpi, "|pmi2|pmix|pmix_v[0-9]|cray_shasta|none",
        "pmi2, pmix, pmix_vN, cray_shasta, none, or empty for the site default");
  check(cl, "binding", cl.slurm_binding, "srun|mini5d", "srun, mini5d");
  check(cl, "gpu_bind", cl.slurm_gpu_bind, "[a-z_]+(:[0-9a-zA-Z,]+)?", "single:1, per_task:1, map_gpu:..., mask_gpu:...");
  // One GPU per rank (device_choice.hpp): when srun binds, each task must see exactly
  // one GPU. `closest` shows a task every GPU of its NUMA domain (all four on a
  // one-socket node), `none` every GPU of the node.
  if (cl.device.kind == "gpu" && cl.slurm_binding == "srun")
    check(cl, "gpu_bind", cl.slurm_gpu_bind, "single:1|per_task:1|(map_gpu|mask_gpu):[0-9a-fA-Fx,]+",
          "with slurm.binding: srun, one GPU per task: single:1 (nearest), per_task:1, map_gpu:LIST or "
          "mask_gpu:LIST; or slurm.binding: mini5d, which shows every GPU and picks the nearest");
  check(cl, "gpu_aware_env", cl.slurm_gpu_aware_env, "([A-Za-z_][A-Za-z0-9_]*=[A-Za-z0-9_.:-]*)?",
        "NAME=VALUE, e.g. MPICH_GPU_SUPPORT_ENABLED=1, or empty");
  check(cl, "gpu_aware_lib", cl.slurm_gpu_aware_lib, "(lib[A-Za-z0-9_+-]+)?",
        "a library name such as libmpi_gtl_cuda, or empty");
  if (!cl.slurm_gpu_aware_lib.empty() && cl.slurm_gpu_aware_env.empty())
    throw InputError(cl.source + ": slurm.gpu_aware_lib: '" + cl.slurm_gpu_aware_lib +
                     "' given without slurm.gpu_aware_env (the switch it guards)");
  // Checked against the node here, so the --slurm-* flags and a file alike are caught.
  if (cl.slurm_reserved_cores >= cl.cores_per_node)
    throw InputError(cl.source + ": slurm.reserved_cores: " + std::to_string(cl.slurm_reserved_cores) +
                     " is not valid (valid: fewer than cores_per_node, " + std::to_string(cl.cores_per_node) + ")");
  if (cl.slurm_threads_per_core > cl.threads_per_core)
    throw InputError(cl.source + ": slurm.threads_per_core: " + std::to_string(cl.slurm_threads_per_core) +
                     " is not valid (valid: 1 to threads_per_core, " + std::to_string(cl.threads_per_core) + ")");
  check(cl, "time", cl.slurm_time, "([0-9]+-)?[0-9]{1,2}:[0-9]{2}:[0-9]{2}|[0-9]+",
        "HH:MM:SS, D-HH:MM:SS or minutes");
  // The plan's own step and checkpoint are checked when the script is written
  // (output/signal_margin); a limit within the exit allowance can never hold a step.
  if (slurm_time_seconds(cl.slurm_time) <= static_cast<long long>(kExitAllowanceSeconds))
    throw InputError(cl.source + ": slurm.time: '" + cl.slurm_time + "' is not valid (valid: longer than " +
                     std::to_string(static_cast<long long>(kExitAllowanceSeconds)) +
                     " s, the time mini5d keeps to exit and requeue after its last checkpoint)");
}

}  // namespace mini5d::plan
