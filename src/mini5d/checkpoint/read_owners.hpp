// SPDX-License-Identifier: BSD-3-Clause
// Who verifies which element of a dataset a load reads, so that each byte of the file
// is read once and every element still counts once in its checksum.
//
// A load's requests may overlap (every data-parallel rank reads the same whole weight)
// and may leave gaps (a caller that needs part of a dataset). The checksum is a sum
// over elements, so the ranks can add up the parts they read, provided each element is
// counted exactly once: a requested element is owned by the first reader that asked
// for it, readers ordered by rank and then by the order of the rank's requests; an
// element nobody asked for is read for the checksum alone, by the rank whose even part
// of the flat dataset holds it. Every rank derives the same owners from the same
// gathered blocks, with no further exchange.
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

// The runs of `mine` (the request `readers[me]`) that it owns: the parts no earlier
// reader (readers[0 .. me)) asked for. Runs keep their local positions, so they index
// the buffer `mine` was read into. `readers` in owner order.
std::vector<Run> owned_runs(const std::vector<std::int64_t>& shape, const std::vector<Reader>& readers,
                            std::size_t me, const ShardDescriptor& mine);

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
