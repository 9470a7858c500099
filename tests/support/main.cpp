// SPDX-License-Identifier: BSD-3-Clause
// Catch2 entry point for every mini5d test binary: MPI and Kokkos are initialised once
// around the whole session (MPI tests run under mpiexec; the others as one rank).
#define CATCH_CONFIG_RUNNER
#include <mpi.h>

#include <Kokkos_Core.hpp>
#include <catch2/catch.hpp>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int result = 0;
  {
    Kokkos::ScopeGuard kokkos(argc, argv);
    result = Catch::Session().run(argc, argv);
  }
  MPI_Finalize();
  return result;
}
