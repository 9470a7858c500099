// SPDX-License-Identifier: BSD-3-Clause
// The `mini5d ceilings` command: the sgemm and stream-triad ceilings the kernel table
// compares each kernel family against (measure/ceilings.hpp does the measuring).
#pragma once
#include <mpi.h>

#include <ostream>
#include <string>
#include <vector>

namespace mini5d::commands {

// `mini5d ceilings [refresh | CLUSTER.yaml]`: prints the cached ceilings, measuring
// (and caching) them when there are none or when refresh is asked for, or caching a
// cluster file's figures instead. Rank 0 alone measures and prints; an override
// (section.field=value) on the command line throws InputError on every rank.
int ceilings_command(MPI_Comm comm, const std::string& arg, const std::vector<std::string>& overrides,
                     std::ostream& os);

}  // namespace mini5d::commands
