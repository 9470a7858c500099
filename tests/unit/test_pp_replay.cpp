// SPDX-License-Identifier: BSD-3-Clause
// The pipeline replay (rules/pipeline_replay.hpp): with equal stage costs it gives the
// textbook bubble of each schedule; with uneven ones, a timeline worked out by hand.
#include <catch2/catch.hpp>

#include <algorithm>

#include "mini5d/rules/pipeline_replay.hpp"

using namespace mini5d;

namespace {
pp::Spec spec(pp::Kind k, int p, int v, int m) {
  pp::Spec s;
  s.kind = k, s.p = p, s.v = v, s.m = m;
  return s;
}
}  // namespace

TEST_CASE("equal stages: every rank idles the formula's share", "[pp][replay]") {
  const pp::Spec cases[] = {spec(pp::Kind::one_f_one_b, 4, 1, 8), spec(pp::Kind::gpipe, 3, 1, 4),
                            spec(pp::Kind::interleaved, 2, 2, 4), spec(pp::Kind::interleaved, 4, 3, 8),
                            spec(pp::Kind::one_f_one_b, 2, 1, 1)};
  for (const pp::Spec& s : cases) {
    const std::vector<double> cost(std::size_t(s.p * s.v), 1.0 / s.v);
    const auto b = pp::modelled_bubbles(s, cost);
    for (int r = 0; r < s.p; ++r) CHECK(b[std::size_t(r)] == Approx(pp::formula_bubble(s)).epsilon(1e-12));
  }
  // 1F1B, p = 4, m = 8, forward 1 and backward 2: (m + p - 1) (1 + 2) = 33.
  const pp::Spec s = spec(pp::Kind::one_f_one_b, 4, 1, 8);
  const pp::Replay r = pp::replay(s, {1, 1, 1, 1}, {2, 2, 2, 2});
  CHECK(r.span == Approx(33));
  CHECK(r.busy[0] == Approx(24));
}

TEST_CASE("uneven stages: a timeline worked by hand", "[pp][replay]") {
  // 1F1B, p = 2, m = 2; stage 0 costs 1 forward and 2 backward, stage 1 costs 3 and 6.
  // Stage 0 runs F0 F1 B0 B1, stage 1 F0 B0 F1 B1:
  //   s0 F0 [0,1]  s1 F0 [1,4]  s0 F1 [1,2]  s1 B0 [4,10]  s0 B0 [10,12]
  //   s1 F1 [10,13]  s1 B1 [13,19]  s0 B1 [19,21]
  const pp::Spec s = spec(pp::Kind::one_f_one_b, 2, 1, 2);
  const pp::Replay r = pp::replay(s, {1, 3}, {2, 6});
  CHECK(r.span == Approx(21));
  CHECK(r.end[0] == Approx(21));
  CHECK(r.end[1] == Approx(19));
  CHECK(r.busy[0] == Approx(6));
  CHECK(r.busy[1] == Approx(18));
  CHECK(r.bubble(0) == Approx(15.0 / 21));
  CHECK(r.bubble(1) == Approx(3.0 / 21));
  // The same through modelled_bubbles (backward = twice the forward).
  const auto b = pp::modelled_bubbles(s, {1, 3});
  CHECK(b[0] == Approx(15.0 / 21));
  CHECK(b[1] == Approx(3.0 / 21));
}

TEST_CASE("the lower bound never exceeds the replay, and meets it when the last stage is slowest",
          "[pp][replay]") {
  CHECK(pp::replay_lower_bound(spec(pp::Kind::one_f_one_b, 2, 1, 2), {1, 3}, {2, 6}) == Approx(21));
  unsigned seed = 7;
  const auto next = [&] { return double((seed = seed * 1103515245u + 12345u) >> 16 & 1023) / 256 + 0.25; };
  for (int k = 0; k < 300; ++k) {
    const pp::Kind kind = k % 3 == 0 ? pp::Kind::gpipe : k % 3 == 1 ? pp::Kind::one_f_one_b : pp::Kind::interleaved;
    const int p = 2 + k % 4, v = kind == pp::Kind::interleaved ? 2 : 1;
    const pp::Spec s = spec(kind, p, v, kind == pp::Kind::interleaved ? p * (1 + k % 3) : 1 + k % 9);
    std::vector<double> f(std::size_t(p * v)), b(f.size());
    for (std::size_t i = 0; i < f.size(); ++i) f[i] = next(), b[i] = 2 * f[i];
    CHECK(pp::replay_lower_bound(s, f, b) <= pp::replay(s, f, b).span * (1 + 1e-12));
  }
}

TEST_CASE("even stages but a heavier last one: the closed form m max C + (sum C - max C) / v", "[pp][replay]") {
  // The planner's closed form for even splits (plan/cost/time_model.cpp): only the last
  // virtual stage (the head) differs.
  for (const pp::Spec& s : {spec(pp::Kind::one_f_one_b, 4, 1, 8), spec(pp::Kind::interleaved, 4, 2, 8),
                            spec(pp::Kind::gpipe, 3, 1, 5), spec(pp::Kind::interleaved, 2, 3, 6)}) {
    const int P = s.p * s.v;
    std::vector<double> f(std::size_t(P), 1.0 / s.v);
    f.back() += 0.7;
    std::vector<double> b(f);
    for (double& x : b) x *= 2;
    std::vector<double> C(std::size_t(s.p), 0.0);
    for (int vs = 0; vs < P; ++vs) C[std::size_t(vs % s.p)] += 3 * f[std::size_t(vs)];
    double sum = 0, most = 0;
    for (double c : C) sum += c, most = std::max(most, c);
    CHECK(pp::replay(s, f, b).span == Approx(s.m * most + (sum - most) / s.v).epsilon(1e-12));
  }
}

TEST_CASE("the replay refuses costs of the wrong length", "[pp][replay]") {
  CHECK_THROWS_AS(pp::replay(spec(pp::Kind::one_f_one_b, 2, 1, 2), {1}, {2}), std::invalid_argument);
}
