// SPDX-License-Identifier: BSD-3-Clause
// Checkpoints of bf16 runs (part of test_bf16_layouts, mpiexec -n 4). A bf16 run saves
// its fp32 master weights and moments, as an fp32 run saves its weights; its bf16
// working copy is rebuilt from them on load. So:
//   exact: 10 bf16 steps straight vs 5, save, resume to 10: steps 6-10 bit-identical,
//          at 1 rank, d2 with ZeRO 1 and 3 (master shards), and t2 with SP;
//   switch: a bf16 checkpoint continued in fp32, and an fp32 one continued in bf16:
//          each continues from the saved state (its next losses within the bf16
//          layout bound u = 2^-8 of the run that did not switch; a run that lost the
//          state would start again near the initial loss, 2.78 against about 2.0).
#include <mpi.h>

#include <catch2/catch.hpp>
#include <cmath>

#include "mini5d/train/trainer.hpp"
#include "layouts.hpp"
#include "mpi_util.hpp"
#include "reshard.hpp"

using namespace mini5d;
using test::Group;
using test::world_max;

namespace {
Deck deck(const test::Layout& l, const std::string& precision, const std::string& dir) {
  return test::tiny(l, 10, {"train.precision=" + precision, "checkpoint.dir=" + dir, "checkpoint.keep=0"});
}
std::vector<double> losses(const train::Trainer& tr) {
  std::vector<double> v;
  for (const auto& s : tr.record().history) v.push_back(s.loss);
  return v;
}
// Steps 6-10 of `resumed` against those of `straight`: the worst relative difference.
double worst_after_resume(const train::Trainer& straight, const train::Trainer& resumed) {
  const auto a = losses(straight), b = losses(resumed);
  if (a.size() != 10 || b.size() != 5) return INFINITY;
  double w = 0;
  for (int i = 0; i < 5; ++i) w = test::worse(w, test::abs_error(b[i], a[5 + i]) / std::fabs(a[5 + i]));
  return world_max(w);
}
}  // namespace

TEST_CASE("bf16 exact resume: steps 6-10 bit-identical, whole and sharded master weights", "[bf16][checkpoint][mpi]") {
  for (const test::Layout& l : {test::Layout(""), test::Layout("d2 zero1"), test::Layout("d2 zero3"),
                                test::Layout("t2 sp")}) {
    Group g(l.ranks());
    const std::string dir = test::fresh_dir("bf16_resume/" + std::to_string(l.ranks()) + "_" +
                                            std::to_string(l.zero)) + "/group" + std::to_string(g.index);
    train::Trainer straight(deck(l, "bf16", dir), g.comm);
    straight.run();
    {
      train::Trainer first(deck(l, "bf16", dir), g.comm);
      first.run({}, {}, 5);
      first.save("test");
    }
    train::Trainer resumed(deck(l, "bf16", dir), g.comm);
    resumed.resume("latest");
    resumed.run();
    INFO(l.name());
    CHECK(worst_after_resume(straight, resumed) == 0.0);
  }
}

TEST_CASE("a bf16 checkpoint continues in fp32, an fp32 one in bf16", "[bf16][checkpoint][mpi]") {
  const test::Layout l("d2 zero1");
  Group g(l.ranks());
  for (const auto& [saved, continued] : {std::pair{"bf16", "fp32"}, std::pair{"fp32", "bf16"}}) {
    const std::string dir = test::fresh_dir(std::string("bf16_switch/") + saved) + "/group" + std::to_string(g.index);
    train::Trainer straight(deck(l, saved, dir), g.comm);
    straight.run();
    {
      train::Trainer first(deck(l, saved, dir), g.comm);
      first.run({}, {}, 5);
      first.save("test");
    }
    train::Trainer resumed(deck(l, continued, dir), g.comm);
    const auto e = resumed.resume("latest");
    REQUIRE(e.changes.size() == 1);
    CHECK(e.changes[0] == std::string("resume: train.precision changed ") + saved + " -> " + continued);
    resumed.run();
    const double w = worst_after_resume(straight, resumed);
    if (test::world_rank() == 0)
      std::printf("checkpoint saved in %s, continued in %s: steps 6-10 within %.2e of the %s run\n", saved, continued,
                  w, saved);
    INFO(saved << " -> " << continued << ": " << w);
    CHECK(w <= 1.0 / 256);
    CHECK(w > 0);  // the other precision did run
  }
}
