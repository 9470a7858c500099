// SPDX-License-Identifier: BSD-3-Clause
// Who verifies which element of a dataset a load reads, so that each byte of the file
// is read once and every element still counts once in its checksum.
//
// A load's requests may overlap (every data-parallel rank reads the same whole weight)
// and may leave gaps (a caller that needs part of a dataset). The checksum is a sum
// over elements, so the ranks can add up the parts they read, provided each element is
// counted exactly once. An element that several requests hold is owned by one of
// them: for an element in the even part p of the flat dataset (p of the ranks' count),
// the request whose rank comes first counting cyclically from p (p, p+1, ..., 0, ...),
// and of one rank's requests the first it made. Replicas thus split the work of the
// checksum evenly, and a rank that alone reads an element owns it. An element nobody
// asked for is read for the checksum alone, by the rank whose even part holds it.
// Every rank derives the same owners from the same gathered blocks, with no further
// exchange.
#pragma once
#include <cstdint>
#include <vector>

#include "mini5d/checkpoint/runs.hpp"
#include "mini5d/core/shard.hpp"

namespace mini5d::checkpoint {

// One read request of a dataset by one rank: the blocks it asked for (their local
// offsets do not matter here).
struct Reader {
  int rank = 0;
  std::vector<ShardBlock> blocks;
};

// The runs of `mine` (the request `readers[me]`) that it owns among `ranks` ranks.
// Runs keep their local positions, so they index the buffer `mine` was read into.
// `readers` in rank order, each rank's requests in the order it made them.
std::vector<Run> owned_runs(const std::vector<std::int64_t>& shape, const std::vector<Reader>& readers,
                            std::size_t me, const ShardDescriptor& mine, int ranks);

// The flat ranges of [part.begin, part.end) that no reader asked for, in order.
std::vector<Span> unread_spans(const std::vector<std::int64_t>& shape, const std::vector<Reader>& readers,
                               Span part);

// What the owned elements of a dataset add to its verification: how many they are,
// their checksum, and how many are NaN or infinite. Summed over ranks, `count` is the
// dataset's size once every element has an owner.
struct OwnedSums {
  std::uint64_t count = 0, checksum = 0, nonfinite = 0;
};
void add_owned_sums(const std::vector<Run>& runs, const float* data, OwnedSums& s);

}  // namespace mini5d::checkpoint
