// SPDX-License-Identifier: BSD-3-Clause
// `mini5d calibrate [DECK] [--out FILE] [--base CLUSTER.yaml] [--quick]`: measures the
// allocation in hand (docs/planner.md) and writes a planner cluster file from what it
// measured, so that mini5d-plan predicts this machine rather than a data sheet:
//   * every GEMM the deck's model runs (forward NT, backward NN and TN, attention per
//     causal block, LM head), at the deck's micro-batch and the powers of two below it,
//     for each tensor degree the ranks allow: the table of device.gemm (model: measured);
//   * the sgemm rate of a 1024^3 product (sustained), a triad over arrays far beyond the
//     caches (memory bandwidth) and the fixed cost of a kernel launch and its fence;
//   * all-reduce, all-gather, reduce-scatter and send/recv from 4 KiB to 64 MiB inside a
//     node (the ranks that share one) and across nodes (one rank per node, every local
//     rank's group at once), as the tiers' curves, gather_curve and send_curve, with the
//     latency per message step from the smallest send.
// Every rank measures at the same time, bound and threaded as `train` would bind it, so
// the figures carry the contention training sees; each is the mean over ranks of the
// per-rank medians. Virtual nodes (parallel.ranks_per_node) count as nodes. What was not
// measured (a peak rate, the memory size) comes from --base when given and is labelled.
#pragma once
#include <mpi.h>

#include <ostream>
#include <string>
#include <vector>

#include "mini5d/core/deck.hpp"
#include "mini5d/plan/cost/compute_model.hpp"

namespace mini5d::commands {

struct CalibrateOptions {
  std::string out = "mini5d-calibrated.yaml";
  std::string base;    // a cluster file whose peak, memory and names carry over
  bool quick = false;  // shorter timings and messages up to 4 MiB (tests)
};

// The distinct products the deck's model runs at the layouts calibrate covers (see
// above) on `ranks` ranks; shapes whose operands exceed max_bytes are left out.
std::vector<plan::GemmCall> calibration_shapes(const Deck& deck, int ranks, double max_bytes);

// Collective over world; rank 0 prints a summary and writes options.out.
int calibrate_command(MPI_Comm world, const Deck& deck, const CalibrateOptions& options, std::ostream& os);

}  // namespace mini5d::commands
