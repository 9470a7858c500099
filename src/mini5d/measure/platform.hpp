// SPDX-License-Identifier: BSD-3-Clause
// What the run is built on: library versions and the Kokkos backend, for the start-up
// header and the JSON report (results are only comparable with their platform).
#pragma once
#include <string>

namespace mini5d::measure {

struct Platform {
  std::string mini5d_version, git_hash, kokkos, backend, mpi, hdf5, hwloc, compiler;
  std::string device;  // where the kernels run: the GPU and its memory, or the host's threads and memory
  int ranks = 1;
};

// Collective over MPI_COMM_WORLD's size only (no communication).
Platform describe_platform();

// This host's name ("unknown" if the system will not say).
std::string host_name();

}  // namespace mini5d::measure
