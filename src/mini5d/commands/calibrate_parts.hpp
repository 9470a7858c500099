// SPDX-License-Identifier: BSD-3-Clause
// The pieces of `mini5d calibrate` shared by its three files: the command and its
// measurements, the memory-bound kernel probe, and the cluster file written from them.
#pragma once
#include <mpi.h>

#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "mini5d/commands/calibrate_command.hpp"
#include "mini5d/plan/cost/cluster_desc.hpp"
#include "mini5d/topology/membership.hpp"

namespace mini5d::commands::calibrate {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// %g with `digits` significant digits: the figures of the messages and of the file.
std::string num(double v, int digits = 4);

// One measured link tier: the three curves (bus bandwidth in the planner's convention,
// comm_model.hpp) and the latency per message step.
struct TierFigures {
  double latency = 0;
  std::vector<std::pair<double, double>> allreduce, gather, send;  // (bytes, bytes/s)
  std::string note;
};

// The memory-bound kernels in the planner's byte counts (plan/cost/time_model.hpp): every
// rank trains the deck's model alone (one rank, no communication, no recomputation) for
// about a second, all ranks at once, and its kernel profile's per-family seconds are set
// against the bytes the planner counts for that run. At two micro-batch sizes (the
// deck's and a quarter of it), time = fixed + bytes / rate is solved per kind, so that
// smaller micro-batches pay their per-launch and per-row costs.
struct MemoryBoundRates {
  double elementwise = 0, softmax = 0, optimizer = 0;  // bytes/s
  double fixed_per_block = 0;  // seconds per block and micro-batch
  std::vector<int> micro_batches;
};

// Whether the kernels' memory is the host's (a host backend): the memory figures are
// measured then, and come from --base on a device backend.
bool host_memory_space();

// Collective over world; rank 0 says what it times on `os`.
MemoryBoundRates measure_memory_bound(MPI_Comm world, const Deck& deck, bool quick, std::ostream& os);

// Everything the cluster file is written from, as rank 0 holds it after the
// measurements (each figure already the mean over ranks).
struct Measured {
  int ranks = 1;
  topology::NodeMembership nm;
  std::vector<plan::GemmCall> shapes;
  std::vector<double> seconds;  // per shape
  double best_rate = 0, sustained = 0, triad = 0, launch = 0;
  MemoryBoundRates memory_bound;
  TierFigures intra, inter;  // measured when the allocation has them
  double overlap = -1;       // -1: not measured (one rank)
};

// The cluster file's text; `base` is the loaded opt.base (unused when that is empty).
std::string cluster_yaml(const Deck& deck, const CalibrateOptions& opt, const plan::ClusterDesc& base,
                         const Measured& m);

// Writes `text` to `out` so that no half-written or unloadable file is left there; says
// so on `os`. Returns what went wrong, "" when nothing did.
std::string write_cluster_file(const std::string& text, const std::string& out, std::ostream& os);

}  // namespace mini5d::commands::calibrate
