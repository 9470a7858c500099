// SPDX-License-Identifier: BSD-3-Clause
// Placement at the start of a run (docs/placement.md): discover the node, find which ranks
// share a node (or cut virtual nodes), refuse a layout whose tensor groups cross
// nodes unless parallel.force_placement, bind this rank to its share of cores and set
// its BLAS threads. Returns, on rank 0, the lines the start-up header prints: the node,
// the placement table per axis and every rank's binding.
#pragma once
#include <mpi.h>

#include <string>

#include "mini5d/core/deck.hpp"

namespace mini5d::topology {

struct Placement {
  std::string text;    // rank 0: the lines for the start-up header; empty elsewhere
  int device_id = -1;  // the GPU this rank should use (its CUDA/HIP index), -1: none
  int host_threads = 0;  // Kokkos host threads (OpenMP backend), 0: Kokkos decides
};

// Collective over comm (the world the grid is built on). Call it before Kokkos is
// initialised, so the OpenMP pool is sized to the rank's cores and Kokkos can be told
// the rank's GPU. Throws InputError on every rank alike when the placement is refused.
Placement place_this_rank(MPI_Comm comm, const Deck& deck);

}  // namespace mini5d::topology
