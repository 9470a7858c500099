// SPDX-License-Identifier: BSD-3-Clause
// How mini5d ends a command that threw. Input problems (InputError: every rank reads the
// same deck and command line, so every rank throws together) print once, on rank 0, and
// give status 2. A failure every rank found together (AgreedError: a checkpoint save on
// a full disk) prints once and gives 1. Any other failure prints one whole line per
// failing rank ("mini5d: rank N: fatal: ...") and, with more than one rank, ends the job:
// the other ranks may be waiting in a collective this one will never join.
#pragma once
#include <exception>

namespace mini5d::commands {

// Says what failed as above (stdout flushed first) and returns the exit status.
int report_failure(const std::exception& e, int rank, int ranks);

}  // namespace mini5d::commands
