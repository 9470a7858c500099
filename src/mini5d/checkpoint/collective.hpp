// SPDX-License-Identifier: BSD-3-Clause
// The MPI glue of the checkpoint code: gathering names from every rank, and turning
// problems found on some ranks into the same exception on all of them (a rank that
// throws alone would leave the others waiting in the next collective forever).
#pragma once
#include <mpi.h>

#include <string>
#include <vector>

namespace mini5d::checkpoint::detail {

// Every rank's strings, concatenated in rank order. Collective.
std::vector<std::string> allgather_strings(MPI_Comm comm, const std::vector<std::string>& mine);

// Rank `root`'s string on every rank. Collective.
std::string bcast_string(MPI_Comm comm, std::string s, int root);

enum class ProblemKind { Input, Runtime };

// If any rank has problems, throws on every rank: InputError (kind Input), or
// AgreedError (kind Runtime, `comm` spanning the job; std::runtime_error otherwise), with the problems of all ranks, duplicates removed, in rank
// order, at most a dozen lines. Collective.
void raise_if_any(MPI_Comm comm, const std::vector<std::string>& problems, ProblemKind kind);

// True on every rank if `mine` is true on any rank. Collective.
bool any_rank(MPI_Comm comm, bool mine);

// Wall time since `start` (MPI_Wtime) of the slowest rank. Collective.
double slowest_seconds(MPI_Comm comm, double start);

}  // namespace mini5d::checkpoint::detail
