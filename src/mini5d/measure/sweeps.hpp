// SPDX-License-Identifier: BSD-3-Clause
// The measurements behind `mini5d calibrate` (commands/calibrate_command.hpp), each collective over
// the communicator given: every rank measures at the same time, after a barrier, with
// the same number of repetitions (agreed from the slowest rank's trial), so that the
// figures include what the ranks of a node take from each other (cores, caches, memory
// bandwidth) as they do in training. Each returns this rank's median seconds per call.
#pragma once
#include <mpi.h>

#include <vector>

#include "mini5d/kernels/views.hpp"
#include "mini5d/plan/cost/compute_model.hpp"

namespace mini5d::measure {

// Products as the runtime calls them: KokkosBlas::gemm on LayoutRight fp32 Views of the
// default execution space (what kernels/linear.hpp and attention.hpp pass). In
// training a product's operands come back from the other kernels' traffic, so a sweep
// repeating one product on hot caches would read fast: before each timed call a pass
// over 8 MiB (beyond the private caches, one buffer for the whole sweep) stands for it.
class GemmTimer {
 public:
  explicit GemmTimer(MPI_Comm comm);
  double seconds(const plan::GemmCall& call, double min_seconds) const;

 private:
  MPI_Comm comm_;
  Vec<float> evict_;
};

// A tiny parallel_for and its fence: the fixed cost every memory-bound kernel pays.
double time_launch(MPI_Comm comm);

// Bytes/s of a triad a = b + s c over arrays of `bytes` each (read 2, write 1).
double triad_bandwidth(MPI_Comm comm, double bytes);

// Collectives on host buffers of `bytes` (the payload as the planner counts it: the
// all-reduced buffer, the gathered whole, the scattered whole, the message sent).
enum class Collective { allreduce, allgather, reduce_scatter, sendrecv };
const char* collective_name(Collective c);
double time_collective(MPI_Comm comm, Collective c, double bytes, double min_seconds);

// The fraction of an all-reduce of `bytes` that GEMMs running meanwhile hide, as the
// runtime overlaps its gradient reduction with the backward (a posted MPI_Iallreduce,
// tested between products, then waited for): with t_c the products alone, t_m the
// all-reduce alone and t_b both, (t_c + t_m - t_b) / min(t_c, t_m), in [0, 1]. The
// planner's overlap efficiency (time_model.hpp); the same on every rank.
double overlap_efficiency(MPI_Comm comm, double bytes);

// Mean, smallest and largest of one value per rank, over comm.
struct OverRanks {
  double mean = 0, min = 0, max = 0;
};
OverRanks over_ranks(MPI_Comm comm, double mine);

}  // namespace mini5d::measure
