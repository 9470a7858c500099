// SPDX-License-Identifier: BSD-3-Clause
// The pipeline's stage split (rules/stage_split.hpp), shared by the runtime and the
// planner: auto is the even split where p*v divides the layers, else the balanced one;
// the balanced split against a brute force over every split (the least largest stage
// cost, then the least sum of squares); a heavy head gets its stage fewer blocks; the
// published shapes (70 blocks on 12 stages, 126 on 16) split; parallel.stage_layers'
// syntax and rules; and the block-weighted peak of a schedule's activation sets.
#include <catch2/catch.hpp>
#include <functional>
#include <numeric>

#include "mini5d/core/stage_layers_text.hpp"
#include "mini5d/rules/layout_shape_rules.hpp"
#include <stdexcept>
#include "mini5d/rules/pipeline_schedule.hpp"
#include "mini5d/rules/stage_split.hpp"

using namespace mini5d;

namespace {
SplitShape tiny(long long layers) { return {layers, 64, 256, 16, 32, 0, 1, 1}; }

std::vector<double> stage_costs(const SplitShape& m, const std::vector<long long>& split) {
  std::vector<double> c(split.size(), 0.0);
  long long b = 0;
  for (std::size_t s = 0; s < split.size(); ++s)
    for (long long k = 0; k < split[s]; ++k) c[s] += block_split_cost(m, b++);
  c.front() += embedding_split_cost(m);
  c.back() += head_split_cost(m);
  return c;
}

// Every split of m.layers into S non-empty stages.
void each_split(long long L, long long S, const std::function<void(const std::vector<long long>&)>& f) {
  std::vector<long long> cur;
  std::function<void(long long)> rec = [&](long long left) {
    if (static_cast<long long>(cur.size()) == S - 1) {
      cur.push_back(left);
      f(cur);
      cur.pop_back();
      return;
    }
    for (long long k = 1; k <= left - (S - 1 - static_cast<long long>(cur.size())); ++k) {
      cur.push_back(k);
      rec(left - k);
      cur.pop_back();
    }
  };
  rec(L);
}
}  // namespace

TEST_CASE("auto: even where p*v divides the layers, else balanced", "[pp][split]") {
  CHECK(stage_split(tiny(8), 2) == std::vector<long long>{4, 4});
  CHECK(stage_split(tiny(8), 4) == std::vector<long long>{2, 2, 2, 2});
  CHECK(stage_split(tiny(4), 4) == std::vector<long long>{1, 1, 1, 1});
  CHECK(stage_split(tiny(7), 1) == std::vector<long long>{7});
  // A light head: the balanced split is the even one too.
  CHECK(balanced_split(tiny(8), 4) == std::vector<long long>{2, 2, 2, 2});
  // 5 blocks on 2 stages: the head's stage gets the fewer.
  CHECK(stage_split(tiny(5), 2) == std::vector<long long>{3, 2});
  CHECK(stage_split(tiny(5), 2) == balanced_split(tiny(5), 2));
  // GPT-2 small's shape: its logits (2 d vocab, 77 MFLOP per token) weigh about five
  // blocks, so balancing leaves the last stage one block; auto keeps Megatron's even cut.
  const SplitShape gpt2{12, 768, 3072, 50257, 1024, 0, 1, 1};
  CHECK(stage_split(gpt2, 4) == std::vector<long long>{3, 3, 3, 3});
  StageLayers balanced;
  balanced.balanced = true;
  CHECK(stage_split(gpt2, 4, balanced) == std::vector<long long>{3, 4, 4, 1});
  StageLayers given;
  given.counts = {6, 2, 2, 2};
  CHECK(stage_split(gpt2, 4, given) == given.counts);
}

TEST_CASE("the automatic split has the least largest stage cost, then the least sum of squares", "[pp][split]") {
  for (const SplitShape& m : {tiny(7), tiny(9), SplitShape{10, 64, 256, 3000, 32, 0, 1, 1},
                              SplitShape{9, 32, 128, 16, 16, 4, 2, 2}}) {
    for (long long S : {2LL, 3LL, 4LL}) {
      double best_max = 1e300, best_sq = 1e300;
      each_split(m.layers, S, [&](const std::vector<long long>& s) {
        const auto c = stage_costs(m, s);
        const double mx = *std::max_element(c.begin(), c.end());
        double sq = 0;
        for (double x : c) sq += x * x;
        if (mx < best_max * (1 - 1e-12)) best_max = mx, best_sq = sq;
        else if (mx <= best_max * (1 + 1e-12)) best_sq = std::min(best_sq, sq);
      });
      const auto got = balanced_split(m, S);
      const auto c = stage_costs(m, got);
      double sq = 0;
      for (double x : c) sq += x * x;
      INFO("layers " << m.layers << " vocab " << m.vocab << " experts " << m.experts << " S " << S << ": split "
                     << format_counts(got));
      REQUIRE(static_cast<long long>(got.size()) == S);
      CHECK(std::accumulate(got.begin(), got.end(), 0LL) == m.layers);
      CHECK(*std::min_element(got.begin(), got.end()) >= 1);
      CHECK(*std::max_element(c.begin(), c.end()) == Approx(best_max).epsilon(1e-12));
      CHECK(sq == Approx(best_sq).epsilon(1e-12));
    }
  }
}

TEST_CASE("a head heavier than a block gets its stage fewer blocks", "[pp][split]") {
  // The logits (2 d vocab = 6.4 MFLOP per token) weigh about 60 blocks of 0.1 MFLOP.
  const SplitShape m{8, 64, 256, 50000, 32, 0, 1, 1};
  CHECK(balanced_split(m, 2) == std::vector<long long>{7, 1});
  // A Llama-3-70B-like shape (d 8192, ffn 4d, vocab 128256): the head is about 1.3
  // blocks, so 70 blocks on 12 stages give the last stage the fewest.
  const SplitShape big{70, 8192, 32768, 128256, 4096, 0, 1, 1};
  const auto s = stage_split(big, 12);  // 70 % 12 != 0: balanced
  CHECK(std::accumulate(s.begin(), s.end(), 0LL) == 70);
  CHECK(s.back() == *std::min_element(s.begin(), s.end()));
  CHECK(*std::max_element(s.begin(), s.end()) - *std::min_element(s.begin(), s.end()) <= 2);
  const SplitShape huge{126, 16384, 53248, 128256, 8192, 0, 1, 1};
  const auto h = stage_split(huge, 16);  // 126 % 16 != 0: balanced
  // The head (0.7 of a block) fits beside 7 blocks under the 8 of a full stage; the
  // second short stage goes first, as in published 126-layer runs.
  std::vector<long long> want(16, 8);
  want.front() = want.back() = 7;
  CHECK(h == want);
}

TEST_CASE("more virtual stages than blocks is refused, not split from stray memory", "[pp][split]") {
  // The back-track had no start for a stage past the last block and read before its
  // table (valgrind: an invalid read in balanced_split), which hung a planner test once.
  CHECK_THROWS_WITH(balanced_split(tiny(2), 3),
                    "stage_split: 3 virtual stages for 2 blocks (needs 1 <= p * virtual_stages <= layers)");
  CHECK_THROWS_AS(stage_split(tiny(5), 7), std::invalid_argument);
  CHECK(balanced_split(tiny(3), 3) == std::vector<long long>{1, 1, 1});  // the edge still splits
}

TEST_CASE("parallel.stage_layers: syntax, and the rules against p, v and the layers", "[pp][split]") {
  StageLayers out;
  CHECK(parse_stage_layers("auto", out).empty());
  CHECK((!out.given() && !out.balanced));
  CHECK(parse_stage_layers("balanced", out).empty());
  CHECK((!out.given() && out.balanced));
  CHECK(format_stage_layers(out) == "balanced");
  CHECK(parse_stage_layers("3,5", out).empty());
  CHECK(out.counts == std::vector<long long>{3, 5});
  CHECK(parse_stage_layers(" 3, 5 ", out).empty());
  CHECK(parse_stage_layers("[3,5]", out).empty());  // as a command-line override spells the list
  CHECK(out.counts == std::vector<long long>{3, 5});
  CHECK(format_stage_layers(out) == "3,5");
  CHECK(format_stage_layers(StageLayers{}) == "auto");
  for (const char* bad : {"", "3,,5", "0,8", "a", "3,-1", "2.5", "Auto", "[3,5", "[]"}) {
    INFO(bad);
    CHECK_FALSE(parse_stage_layers(bad, out).empty());
  }
  const ModelShape m{4, 256, 8, 32, 0};
  LayoutShape l;
  l.p = 2;
  CHECK(layout_shape_problems(m, l).empty());
  l.stage_layers.counts = {3, 5};
  CHECK(layout_shape_problems(m, l).empty());
  l.stage_layers.counts = {3, 4};
  REQUIRE(layout_shape_problems(m, l).size() == 1);
  CHECK(layout_shape_problems(m, l)[0] ==
        "parallel.stage_layers: expected p*virtual_stages=2 positive block counts summing to model.layers=8, got 2 "
        "summing to 7");
  l.stage_layers.counts = {};
  l.p = 3;  // 8 blocks on 3 stages: fine now
  CHECK(layout_shape_problems(m, l).empty());
  l.p = 4, l.virtual_stages = 3;
  REQUIRE(layout_shape_problems(m, l).size() == 1);
  CHECK(layout_shape_problems(m, l)[0] ==
        "parallel.p=4: p*virtual_stages=12 must not exceed model.layers=8 (each virtual stage holds at least one block)");
  CHECK(stage_block_count({1, 2, 3, 4}, 2, 0) == 4);
  CHECK(stage_block_count({1, 2, 3, 4}, 2, 1) == 6);
  CHECK(first_block_of({1, 2, 3, 4}, 3) == 6);
}

TEST_CASE("the block-weighted peak of activation sets follows the schedule", "[pp][split]") {
  using namespace mini5d::pp;
  // GPipe keeps every forward: m times the stage's blocks.
  CHECK(peak_in_flight_weighted(schedule({Schedule::gpipe, 2, 2, 4}, 0), {3, 1}) == 16);
  // Equal chunks: the count's peak times the chunk's blocks.
  for (int stage = 0; stage < 4; ++stage) {
    const auto a = schedule({Schedule::interleaved, 4, 2, 8}, stage);
    CHECK(peak_in_flight_weighted(a, {3, 3}) == 3 * peak_in_flight(a, 2));
  }
  // Interleaved p = 2, v = 2, m = 2 on rank 0: F(0,c0) F(1,c0) F(0,c1) then B(0,c1) ...
  // warm-up 2 (p - 1) + (v - 1) p = 4 = every forward, so all four pairs: 2 (a + b).
  CHECK(peak_in_flight_weighted(schedule({Schedule::interleaved, 2, 2, 2}, 0), {1, 5}) == 12);
  // On rank 1 (warm-up 2): F(0,c0) F(1,c0) F(0,c1) in flight before the first backward.
  CHECK(peak_in_flight_weighted(schedule({Schedule::interleaved, 2, 2, 2}, 1), {1, 5}) == 7);
}

TEST_CASE("the interleaved weighted peak is reached within 4p micro-batches (the planner's cap)", "[pp][split]") {
  using namespace mini5d::pp;
  // The planner simulates min(m, 4p) micro-batches (plan/cost/memory_model.cpp): past the
  // warm-up the weight in flight repeats every p*v forwards.
  for (int p : {2, 3, 4})
    for (int v : {2, 3})
      for (int m = p; m <= 10 * p; m += p)
        for (int stage = 0; stage < p; ++stage) {
          std::vector<long long> w;
          for (int j = 0; j < v; ++j) w.push_back(1 + (j * 7 + stage * 3) % 5);
          const long long full = peak_in_flight_weighted(schedule({Schedule::interleaved, p, v, m}, stage), w);
          const long long capped =
              peak_in_flight_weighted(schedule({Schedule::interleaved, p, v, std::min(m, 4 * p)}, stage), w);
          INFO("p " << p << " v " << v << " m " << m << " stage " << stage);
          CHECK(full == capped);
        }
}
