// SPDX-License-Identifier: BSD-3-Clause
// Every rank must train on the same resolved deck: a deck file that differs between
// nodes, or a launcher passing other overrides to some ranks, would otherwise give a
// run whose ranks disagree on shapes (a hang in the first collective) or, worse, on
// nothing visible (another seed, another learning rate on some ranks).
#pragma once
#include <mpi.h>

#include "mini5d/core/deck.hpp"

namespace mini5d::train {

// Compares a hash of the resolved deck across the ranks, before any other collective
// of the run; on a mismatch throws InputError on every rank naming the ranks that
// differ from rank 0 and the first field where they do. Collective.
void require_same_deck(MPI_Comm comm, const Deck& deck);

}  // namespace mini5d::train
