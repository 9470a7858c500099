// SPDX-License-Identifier: BSD-3-Clause
// Refusing a run that cannot fit, before anything is allocated: a
// 50 GB model used to fail deep inside a Kokkos allocation, or be killed by the OOM
// killer, after minutes of start-up. The prediction is the one the header prints
// (training state by ZeRO stage, activations and workspace); the memory is what the
// rank's memory space has free: the device's free memory for a GPU backend, and the
// node's MemAvailable shared by the ranks on the node for a host backend, where the data
// source's tables (a Markov table of 2^24 contexts is gigabytes) count too. On a GPU
// backend the tables are host memory and outside this check.
#pragma once
#include <mpi.h>

#include <string>

namespace mini5d::train {

struct MemoryNeed {
  double state = 0, activations = 0, workspace = 0;  // bytes in the rank's memory space
  double data = 0;  // the data source's tables, host memory (every rank holds its own)
  double device_part() const { return state + activations + workspace; }
  double total() const { return device_part() + data; }
};

struct MemoryOffer {
  double bytes = 0;       // free memory shared by `sharers` ranks
  int sharers = 1;        // ranks drawing on it (the node's ranks for host memory)
  double need_sum = 0;    // what those ranks need together
  std::string source;     // "MemAvailable", "device free memory", "MINI5D_AVAILABLE_MEMORY_MB"
  bool device = false;    // a GPU's memory (the data tables are not in it)
};

// What this rank's memory space offers and what the ranks sharing it need, agreed over
// `world` (collective). MINI5D_AVAILABLE_MEMORY_MB, if set, replaces the measured free
// memory per memory space (for tests).
MemoryOffer memory_offer(MPI_Comm world, const MemoryNeed& mine);

// Empty if the need fits, otherwise one line naming the deck, the need per rank by
// category and the free memory, and the way out.
std::string memory_fit_problem(const std::string& origin, const MemoryNeed& mine, const MemoryOffer& offer);

}  // namespace mini5d::train
