// SPDX-License-Identifier: BSD-3-Clause
// Placement at the start of a run (DESIGN.md §3): discover the node, find which ranks
// share a node (or cut virtual nodes), refuse a layout whose tensor groups cross
// nodes unless parallel.force_placement, bind this rank to its share of cores and set
// its BLAS threads. Returns, on rank 0, the lines the start-up header prints: the node,
// the placement table per axis and every rank's binding.
#pragma once
#include <mpi.h>

#include <string>

#include "mini5d/core/deck.hpp"

namespace mini5d::topology {

// Collective over comm (the world the grid is built on). Throws InputError on every
// rank alike when the placement is refused.
std::string place_this_rank(MPI_Comm comm, const Deck& deck);

}  // namespace mini5d::topology
