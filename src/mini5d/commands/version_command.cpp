// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/commands/version_command.hpp"

#include "mini5d/comm/mpi_gtl.hpp"
#include "mini5d/measure/platform.hpp"

namespace mini5d::commands {

int version_command(MPI_Comm comm, std::ostream& out) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  const auto pf = measure::describe_platform();
  if (rank == 0)
    out << "mini5d " << pf.mini5d_version << " (git " << pf.git_hash << "), Kokkos " << pf.kokkos << " ["
        << pf.backend << "], " << pf.mpi << ", HDF5 " << pf.hdf5 << ", hwloc " << pf.hwloc
        // Whether Cray's GPU transport is in (the batch scripts check with ldd, which starts no MPI).
        << ", Cray MPICH " << (comm::loaded_mpi_gtl().empty() ? "GTL not linked" : "GTL linked") << "\n";
  return 0;
}

}  // namespace mini5d::commands
