// SPDX-License-Identifier: BSD-3-Clause
// The watchdog's heartbeat files (comm/watchdog.hpp): a rank that has waited half the
// collective timeout writes rank-<r> into a folder every rank sees, about once a
// second; at the timeout, the ranks without a fresh file are the ones not waiting with
// the others. Plain POSIX file calls (the watchdog thread may not call MPI).
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace mini5d::comm::watchdog {

// Writes (or refreshes) dir/rank-<rank> with `what`; creates dir and its parents. Failures are ignored:
// the heartbeat only sharpens a message.
void write_heartbeat(const std::string& dir, int rank, const std::string& what);
void remove_heartbeat(const std::string& dir, int rank);
// Ranks 0 .. world_size-1 whose file is missing or more than `stale_s` older than the
// newest one (file times from one file system, so no clock is compared across nodes);
// nullopt when there is no file at all (nothing tells the silent from the waiting).
std::optional<std::vector<int>> silent_ranks(const std::string& dir, int world_size, double stale_s = 3.0);
// "rank 2", "ranks 1, 2 and 3", "ranks 1, 2, 3, 4, 5, 6, 7, 8 and 12 more".
std::string rank_list(const std::vector<int>& ranks);

}  // namespace mini5d::comm::watchdog
