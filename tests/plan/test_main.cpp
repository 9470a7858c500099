// SPDX-License-Identifier: BSD-3-Clause
// Catch2 main for the planner's unit tests (no MPI, no Kokkos: the planner is pure).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
