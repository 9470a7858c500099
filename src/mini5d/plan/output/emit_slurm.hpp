// SPDX-License-Identifier: BSD-3-Clause
// --emit-slurm: an sbatch script for a plan: nodes, one task per device, the cores of
// a node shared evenly among its tasks (threads pinned to them, BLAS/OpenMP thread
// counts equal to the cores owned, docs/placement.md), one GPU per task bound to the
// closest cores, and the srun line that starts mini5d on the emitted deck. The script
// has the shape of the templates in slurm/ (docs/slurm.md explains each line):
// it resumes from `latest` when there is one, and requeues itself when Slurm's
// time-limit warning (SIGUSR1) stopped the run.
#pragma once
#include <ostream>
#include <string>

#include "mini5d/plan/search/search.hpp"

namespace mini5d::plan {

// Checks the cluster's Slurm values first (validate_slurm, inputs/slurm_fields.hpp), as
// the cluster file reader does: flags may have changed them since.
void write_slurm(std::ostream& os, const ModelDesc& m, const ClusterDesc& cl, const Plan& p,
                 const std::string& deck_path);

}  // namespace mini5d::plan
