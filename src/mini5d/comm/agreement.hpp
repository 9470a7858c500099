// SPDX-License-Identifier: BSD-3-Clause
// The MPI glue of the checkpoint code: gathering names from every rank, and turning
// problems found on some ranks into the same exception on all of them (a rank that
// throws alone would leave the others waiting in the next collective forever).
#pragma once
#include <mpi.h>

#include <functional>
#include <string>
#include <vector>

namespace mini5d::comm {

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

// Runs `check` on every rank and agrees on its outcome, for start-up work that can
// fail on some ranks only (a deck or data file missing on one node): if it throws on
// any rank, every rank throws. Each distinct message is kept once; one that not every
// rank gave is prefixed with the ranks that gave it ("rank 1: ..."), so a failure on a
// rank other than 0 is seen, and the job neither hangs nor goes silent. Throws
// InputError if any rank's failure was one, AgreedError (or std::runtime_error over
// part of the job) otherwise. Collective.
void agreed(MPI_Comm comm, const std::function<void()>& check);

// Wall time since `start` (MPI_Wtime) of the slowest rank. Collective.
double slowest_seconds(MPI_Comm comm, double start);

}  // namespace mini5d::comm
