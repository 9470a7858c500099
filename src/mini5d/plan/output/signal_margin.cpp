// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/plan/output/signal_margin.hpp"

#include <algorithm>
#include <cmath>

#include "mini5d/plan/output/format.hpp"
#include "mini5d/plan/inputs/input_files.hpp"

namespace mini5d::plan {

namespace {
// A checkpoint holds the fp32 master weights and AdamW's two fp32 moments: 12 bytes a
// parameter, whatever precision the step computes in.
constexpr double kCheckpointBytesPerParam = 12;
}  // namespace

namespace {
// The job moves data through its nodes' clients until the file system's own limit;
// GB/s in, bytes/s out, 0 when neither rate is stated.
double job_rate(double per_node_gbs, double total_gbs, long long nodes) {
  double gbs = per_node_gbs > 0 ? per_node_gbs * double(nodes) : 0;
  if (total_gbs > 0) gbs = gbs > 0 ? std::min(gbs, total_gbs) : total_gbs;
  return gbs * 1e9;
}
}  // namespace

CheckpointIo checkpoint_io(const ModelDesc& m, const ClusterDesc& cl, long long nodes) {
  CheckpointIo io;
  io.bytes = count_params(m).total * kCheckpointBytesPerParam;
  io.write_bytes_per_s = job_rate(cl.fs_write_gbs_per_node, cl.fs_write_gbs, nodes);
  io.read_bytes_per_s = job_rate(cl.fs_read_gbs_per_node, cl.fs_read_gbs, nodes);
  if (io.read_bytes_per_s <= 0) io.read_bytes_per_s = io.write_bytes_per_s;
  if (io.write_bytes_per_s > 0) io.save_s = io.bytes / io.write_bytes_per_s;
  if (io.read_bytes_per_s > 0) io.load_s = io.bytes / io.read_bytes_per_s;
  return io;
}

SignalMargin signal_margin(const ModelDesc& m, const ClusterDesc& cl, double step_seconds, long long nodes) {
  SignalMargin r;
  const CheckpointIo io = checkpoint_io(m, cl, nodes);
  r.checkpoint_bytes = io.bytes;
  r.step_s = step_seconds;
  r.write_bytes_per_s = io.write_bytes_per_s;
  const double gbs = io.write_bytes_per_s / 1e9;
  const double need = step_seconds + kExitAllowanceSeconds;
  if (r.write_bytes_per_s > 0) {
    r.save_s = io.save_s;
    r.seconds = static_cast<long long>(std::ceil((need + r.save_s) / 10.0)) * 10;
    r.why = "a step (" + ms(step_seconds) + ") + saving " + human_bytes(r.checkpoint_bytes) + " at " +
            fixed(gbs, 1) + " GB/s (" + ms(r.save_s) + ") + " + fixed(kExitAllowanceSeconds, 0) + " s to exit and requeue";
  } else {
    // No write rate stated: the save is not sized; keep two minutes at least.
    r.seconds = std::max(120LL, static_cast<long long>(std::ceil(need / 10.0)) * 10);
    r.why = "a step (" + ms(step_seconds) + ") + " + fixed(kExitAllowanceSeconds, 0) +
            " s to exit and requeue; the save of " + human_bytes(r.checkpoint_bytes) +
            " is not sized (no filesystem.write_gbs in " + cl.source + ")";
  }
  const long long limit = slurm_time_seconds(cl.slurm_time);
  if (r.seconds >= limit)
    throw InputError(cl.source + ": slurm.time: '" + cl.slurm_time + "' (" + std::to_string(limit) +
                     " s) leaves no time to train before the checkpoint warning " + std::to_string(r.seconds) +
                     " s ahead of it (" + r.why + "); give a longer limit");
  return r;
}

}  // namespace mini5d::plan
