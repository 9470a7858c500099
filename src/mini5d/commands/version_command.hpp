// SPDX-License-Identifier: BSD-3-Clause
// `mini5d version`: this build's version and git hash, and the Kokkos, MPI, HDF5 and
// hwloc it runs on.
#pragma once
#include <mpi.h>

#include <ostream>

namespace mini5d::commands {

// Rank 0 prints one line. Returns 0.
int version_command(MPI_Comm comm, std::ostream& out);

}  // namespace mini5d::commands
