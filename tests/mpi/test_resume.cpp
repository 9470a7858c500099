// SPDX-License-Identifier: BSD-3-Clause
// Checkpoint resume through the trainer, under mpiexec -n 4 (docs/checkpoints.md):
//   exact: 10 steps straight vs 5 steps, save, a fresh trainer resumes to 10: the
//          losses of steps 6-10 are bit-identical, at 1 rank and at d=2 with ZeRO 1
//          and 3;
//   reshard: saved at d=4 ZeRO 3, resumed at d=2 ZeRO 1 and at 1 rank: the losses
//          match the uninterrupted run within the layout-invariance tolerance.
#include <mpi.h>

#include <catch2/catch.hpp>
#include <cmath>

#include "mini5d/core/deck.hpp"
#include "mini5d/train/trainer.hpp"
#include "layouts.hpp"
#include "mpi_util.hpp"
#include "reshard.hpp"

using namespace mini5d;
using test::Group;
using test::world_max;
using test::world_rank;

namespace {
// Tiny deck at d ranks with ZeRO `zero`, global batch 16, checkpoints in `dir`.
Deck tiny(int d, int zero, long steps, const std::string& dir) {
  test::Layout l;
  l.d = d, l.zero = zero;
  return test::tiny(l, steps, {"checkpoint.dir=" + dir, "checkpoint.keep=0"});
}
std::vector<double> losses(const train::Trainer& tr) {
  std::vector<double> v;
  for (const auto& s : tr.record().history) v.push_back(s.loss);
  return v;
}
std::string fresh_dir(const std::string& name) { return test::fresh_dir("resume_test/" + name); }
}  // namespace

TEST_CASE("exact resume: steps 6-10 are bit-identical to the uninterrupted run", "[checkpoint][mpi]") {
  struct Case {
    int d, zero;
  };
  for (const Case c : {Case{1, 0}, Case{2, 1}, Case{2, 3}}) {
    const std::string base = fresh_dir("exact_d" + std::to_string(c.d) + "_z" + std::to_string(c.zero));
    Group g(c.d);
    const std::string dir = base + "/group" + std::to_string(g.index);
    train::Trainer straight(tiny(c.d, c.zero, 10, dir), g.comm);
    straight.run();
    {
      // Cut short after step 5, as a job at its time limit: save, and go away.
      train::Trainer first(tiny(c.d, c.zero, 10, dir), g.comm);
      first.run({}, {}, 5);
      first.save("test");
    }
    train::Trainer resumed(tiny(c.d, c.zero, 10, dir), g.comm);
    resumed.resume("latest");
    CHECK(resumed.current_step() == 5);
    resumed.run();
    const auto a = losses(straight), b = losses(resumed);
    REQUIRE(b.size() == 5);
    double diff = 0;
    for (int i = 0; i < 5; ++i) diff = test::worse(diff, test::abs_error(b[i], a[5 + i]));
    INFO("d=" << c.d << " zero=" << c.zero);
    CHECK(world_max(diff) == 0.0);
  }
}

TEST_CASE("reshard: saved at d=4 ZeRO 3, resumed at d=2 ZeRO 1 and at 1 rank", "[checkpoint][mpi]") {
  const std::string dir = fresh_dir("reshard");
  std::vector<double> want;
  {
    Group g(4);
    train::Trainer straight(tiny(4, 3, 10, dir + "/straight"), g.comm);
    straight.run();
    want = losses(straight);
    train::Trainer first(tiny(4, 3, 10, dir), g.comm);
    first.run({}, {}, 5);
    first.save("test");
  }
  // Same tolerance as the layout-invariance test (tests/mpi/test_data_parallel.cpp).
  const double tol = 1e-5;
  for (const auto& [d, zero] : {std::pair{2, 1}, std::pair{1, 0}}) {
    Group g(d);
    train::Trainer resumed(tiny(d, zero, 10, dir), g.comm);
    resumed.resume(dir + "/step-00000005.h5");
    resumed.run();
    const auto got = losses(resumed);
    REQUIRE(got.size() == 5);
    double worst = 0;
    for (int i = 0; i < 5; ++i) worst = test::worse(worst, test::relative_to(got[i], want[5 + i], want[5 + i]));
    worst = world_max(worst);
    INFO("d=" << d << " zero=" << zero << ": worst relative difference " << worst);
    CHECK(worst <= tol);
    if (world_rank() == 0) std::printf("reshard d=4 zero=3 -> d=%d zero=%d: worst relative difference %.3g\n", d, zero, worst);
  }
}
