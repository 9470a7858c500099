// SPDX-License-Identifier: BSD-3-Clause
// How long before the time limit Slurm should warn a job (sbatch --signal=USR1@N) so
// that mini5d can finish its step, write a checkpoint and leave before the limit kills
// it: one predicted step, plus the checkpoint's bytes at the file system's write rate
// (cluster file `filesystem:`), plus a fixed allowance for the exit and the requeue.
#pragma once
#include <string>

#include "mini5d/plan/cost/cluster_desc.hpp"
#include "mini5d/plan/cost/model_desc.hpp"
#include "mini5d/plan/inputs/slurm_fields.hpp"  // kExitAllowanceSeconds, slurm_time_seconds

namespace mini5d::plan {

struct SignalMargin {
  long long seconds = 0;        // what --signal=USR1@ gets
  double checkpoint_bytes = 0;  // the whole model's checkpoint
  double write_bytes_per_s = 0; // the job's file-system write rate, 0: not stated
  double save_s = 0, step_s = 0;
  std::string why;              // one line for the script's comment
};

// A whole-model checkpoint's size, and the job's rates and seconds to write it and to
// read it back through `nodes` nodes at the cluster file's `filesystem:` rates (the
// nodes' share up to the file system's total); a rate not stated is 0 and so are its
// seconds; a read rate not stated is the write rate.
struct CheckpointIo {
  double bytes = 0;
  double write_bytes_per_s = 0, read_bytes_per_s = 0;
  double save_s = 0, load_s = 0;
};
CheckpointIo checkpoint_io(const ModelDesc& m, const ClusterDesc& cl, long long nodes);

// Throws InputError naming slurm.time when the limit leaves no time to train.
SignalMargin signal_margin(const ModelDesc& m, const ClusterDesc& cl, double step_seconds, long long nodes);

}  // namespace mini5d::plan
