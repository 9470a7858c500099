// SPDX-License-Identifier: BSD-3-Clause
// One layout per axis on 2 ranks against one rank, through the shared oracle
// (invariance.hpp) and its bounds, on the tiny deck as it is (every step clipped; the
// axis tests add the second configuration): t2 with SP, p2 (1F1B, two micro-batches),
// c2, e2 (moe-tiny, dropless) and d2 at ZeRO 3. The axis tests run
// many more layouts on 4 ranks; this binary exists for the `openmp` stage, which runs
// it at team size 2 only (OPENMP_ONLY, OPENMP_TEAMS 2: tests/mpi/CMakeLists.txt). A
// team of two threads runs every kernel's team reductions and thread-level loops as a
// GPU would, where the parallel bugs live; the 4-rank tests run at team size 1 there,
// as 4 ranks x 2 threads on 2 cores made team size 2 take more than 300 s, and 2 ranks
// x 2 threads fit the cores.
#include <mpi.h>

#include <catch2/catch.hpp>
#include <string>
#include <utility>
#include <vector>

#include "mini5d/train/trainer.hpp"
#include "invariance_check.hpp"
#include "layouts.hpp"
#include "mpi_util.hpp"

using namespace mini5d;
using test::Layout;

namespace {
// The oracle's bounds hold over 10 steps; 4 keep the stage short (two threads a rank
// wait for each other at every kernel: 6 steps in both configurations took 86 s).
constexpr long kSteps = 4;

// `l` on the world's 2 ranks against `one` on rank 0's own (the same micro-batches).
void check_layout(Deck (*deck)(const Layout&, long, const std::vector<std::string>&), const Layout& one,
                  const Layout& l) {
  const test::InvarianceConfig c = test::configs().front();
  const test::Reference ref = test::Reference::run(deck(one, kSteps, c.overrides));
  train::Trainer tr(deck(l, kSteps, c.overrides), MPI_COMM_WORLD);
  tr.run();
  test::check_invariant(ref, tr, l.name(), c.name);
}
}  // namespace

TEST_CASE("2 ranks: t2, p2, c2, e2 and d2 at ZeRO 3 match one rank", "[mpi][layouts]") {
  REQUIRE(test::world_size() == 2);
  check_layout(test::tiny, Layout(), "t2 sp");
  check_layout(test::tiny, "m2", "p2");
  check_layout(test::tiny, Layout(), "c2");
  check_layout(test::moe_tiny, Layout(), "e2 zero0");
  check_layout(test::tiny, Layout(), "d2 zero3");
}
