// SPDX-License-Identifier: BSD-3-Clause
// The cluster's Slurm values (the file's slurm: section, or mini5d-plan's --slurm-*
// flags), checked where the cluster is read, before any script is written: the cluster
// file reader (cluster_file.cpp) and the Slurm script writer (output/emit_slurm.cpp)
// both call validate_slurm. Here, in inputs/, so that reading a cluster file needs
// nothing of output/.
#pragma once
#include <string>

#include "mini5d/plan/cost/cluster_desc.hpp"

namespace mini5d::plan {

// Seconds added for MPI teardown, the report and `scontrol requeue` (the checkpoint
// warning's margin, output/signal_margin.hpp; a time limit must exceed it).
inline constexpr double kExitAllowanceSeconds = 60;

// The cluster's Slurm values (partition, account, mpi, binding, gpu_aware_env, time),
// whether from the file or flags; throws InputError naming the field and valid values.
void validate_slurm(const ClusterDesc& cl);

// "01:00:00", "1-00:00:00" or minutes ("90"), as sbatch --time takes them; validate_slurm
// has checked the form.
long long slurm_time_seconds(const std::string& t);

}  // namespace mini5d::plan
