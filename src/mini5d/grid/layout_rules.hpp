// SPDX-License-Identifier: BSD-3-Clause
// The rules a parallel layout must satisfy before anything is allocated
// (docs/parallelism.md): the degrees multiply to the number of ranks, and every sharded dimension
// divides by the degree that shards it. Each violated rule is one line naming the
// deck, the field, its value and what it must divide or equal; the caller reports
// all of them at once (rank 0) and exits non-zero.
#pragma once
#include <string>
#include <vector>

#include "mini5d/core/deck.hpp"

namespace mini5d::grid {

// Problems of the deck's layout on `world_size` ranks; empty when valid.
std::vector<std::string> layout_problems(const Deck& deck, int world_size);
// Just the first rule (degrees multiply to the rank count); "" when it holds.
std::string rank_count_problem(const Deck& deck, int world_size);

}  // namespace mini5d::grid
