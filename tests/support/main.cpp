// SPDX-License-Identifier: BSD-3-Clause
// Catch2 entry point for every mini5d test binary: MPI and Kokkos are initialised once
// around the whole session (MPI tests run under mpiexec; the others as one rank).
// MINI5D_TEST_TEAM_SIZE=n fixes the team size of every team kernel (kernels/views.hpp),
// so the `openmp` tests run them with two threads per team as well as one.
// A test spec that matches no test case fails the run (Catch2's --warn NoTests, on by
// default here): a renamed tag would otherwise empty a ctest entry, which then passed
// having checked nothing. And a failing run exits 1, never Catch2's count of failed
// assertions: 77 of them would read as a skip (SKIP_RETURN_CODE 77, tests/Mini5dTests.cmake).
#define CATCH_CONFIG_RUNNER
#include <mpi.h>

#include <Kokkos_Core.hpp>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "mini5d/kernels/kokkos_events.hpp"
#include "mini5d/kernels/views.hpp"

namespace {
// The team size asked for in the environment, or 0; -1 (after one line on stderr) when
// the value is not a whole number the backend can run.
int team_size_from_env() {
  const char* v = std::getenv("MINI5D_TEST_TEAM_SIZE");
  if (!v || !*v) return 0;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  const int most = mini5d::ExecSpace::concurrency();
  if (*end != '\0' || n < 1 || n > most) {
    std::fprintf(stderr, "MINI5D_TEST_TEAM_SIZE=%s: expected a whole number from 1 to %d (threads of %s)\n", v, most,
                 mini5d::ExecSpace::name());
    return -1;
  }
  return int(n);
}
}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int result = 0;
  {
    mini5d::prof::request_unfenced_counting();  // as the app does, before Kokkos starts
    Kokkos::ScopeGuard kokkos(argc, argv);
    const int team = team_size_from_env();
    if (team < 0) {
      result = 2;
    } else {
      mini5d::set_team_size(team);
      Catch::Session session;
      session.configData().warnings = Catch::WarnAbout::NoTests;  // --warn adds to it
      result = session.run(argc, argv);
      const auto& c = session.configData();
      if (result != 0 && !(c.listTests || c.listTestNamesOnly || c.listTags || c.listReporters)) result = 1;
    }
  }
  MPI_Finalize();
  return result;
}
