// SPDX-License-Identifier: BSD-3-Clause
// AdamW, global-norm clipping, the fused per-class norm and the learning-rate schedule
// against values computed by hand (the arithmetic is written out next to each expected
// number) or against the unfused passes they replace.
#include <catch2/catch.hpp>
#include <cmath>

#include "mini5d/kernels/grad_norm.hpp"
#include "mini5d/optim/adamw.hpp"
#include "mini5d/optim/schedule.hpp"

using namespace mini5d;

namespace {
Vec<double> make(std::initializer_list<double> v) {
  Vec<double> d("v", v.size());
  auto h = Kokkos::create_mirror_view(d);
  int i = 0;
  for (double x : v) h(i++) = x;
  Kokkos::deep_copy(d, h);
  return d;
}
double at(Vec<double> d, int i) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), d);
  return h(i);
}
}  // namespace

TEST_CASE("AdamW: two steps by hand, decay only where marked", "[optim]") {
  auto p = make({1.0, -2.0});
  auto g = make({0.5, 0.5});
  optim::AdamWConfig cfg{0.9, 0.99, 1e-8, 0.1};
  // Element 0 decays, element 1 does not.
  optim::AdamW<double> opt(2, {optim::segment(0, 1, true), optim::segment(1, 1, false)}, cfg);
  opt.update(p, g, 0.01, 1);
  // Step 1: m = 0.05, v = 0.0025; mhat = 0.05/0.1 = 0.5, vhat = 0.0025/0.01 = 0.25;
  // update = mhat / (sqrt(vhat) + eps) = 1 (to 2e-8).
  // p0 = 1 - 0.01 * (1 + 0.1 * 1) = 0.989; p1 = -2 - 0.01 * 1 = -2.01.
  CHECK(at(p, 0) == Approx(0.989).epsilon(1e-7));
  CHECK(at(p, 1) == Approx(-2.01).epsilon(1e-7));
  auto g2 = make({-1.0, 0.0});
  opt.update(p, g2, 0.01, 2);
  // Step 2, element 0: m = 0.9*0.05 - 0.1 = -0.055, v = 0.99*0.0025 + 0.01 = 0.012475;
  // mhat = -0.055 / 0.19 = -0.289473..., vhat = 0.012475 / 0.0199 = 0.626884...;
  // p = 0.989 - 0.01 * (mhat / sqrt(vhat) + 0.1 * 0.989).
  const double mhat = -0.055 / 0.19, vhat = 0.012475 / (1 - 0.99 * 0.99);
  const double expect0 = 0.989 - 0.01 * (mhat / (std::sqrt(vhat) + 1e-8) + 0.1 * 0.989);
  CHECK(at(p, 0) == Approx(expect0).epsilon(1e-6));  // moments are fp32
  // Element 1: m = 0.045, v = 0.002475; mhat = 0.045/0.19, vhat = 0.002475/0.0199.
  const double expect1 = -2.01 - 0.01 * ((0.045 / 0.19) / std::sqrt(0.002475 / 0.0199));
  CHECK(at(p, 1) == Approx(expect1).epsilon(1e-6));
}

TEST_CASE("global-norm clipping", "[optim]") {
  auto g = make({3.0, 4.0});  // norm 5
  const double norm = std::sqrt(kernels::sum_of_squares<double>(g));
  CHECK(norm == Approx(5.0).epsilon(1e-15));
  CHECK(kernels::clip_by_global_norm<double>(g, norm, 10.0) == 1.0);  // under the threshold: untouched
  CHECK(at(g, 0) == 3.0);
  CHECK(kernels::clip_by_global_norm<double>(g, norm, 1.0) == Approx(0.2));
  CHECK(at(g, 0) == Approx(0.6));
  CHECK(at(g, 1) == Approx(0.8));
  CHECK(kernels::clip_by_global_norm<double>(g, 1.0, 0.0) == 1.0);  // 0 disables
}

TEST_CASE("warm-up then cosine learning rate", "[optim]") {
  // 10 warm-up steps to 1e-3, then cosine over steps 10..109 down to 1e-4.
  CHECK(optim::learning_rate(0, 110, 10, 1e-3, 1e-4) == Approx(1e-4));
  CHECK(optim::learning_rate(4, 110, 10, 1e-3, 1e-4) == Approx(5e-4));
  CHECK(optim::learning_rate(9, 110, 10, 1e-3, 1e-4) == Approx(1e-3));
  CHECK(optim::learning_rate(10, 110, 10, 1e-3, 1e-4) == Approx(1e-3));
  // Half way through the decay (progress 0.5): floor + (peak - floor) / 2.
  // Step 59 is 49 of the 99 decay intervals in.
  CHECK(optim::learning_rate(59, 110, 10, 1e-3, 1e-4) ==
        Approx(1e-4 + 0.5 * 9e-4 * (1 + std::cos(M_PI * 49.0 / 99.0))));
  CHECK(optim::learning_rate(109, 110, 10, 1e-3, 1e-4) == Approx(1e-4));
  CHECK(optim::learning_rate(500, 110, 10, 1e-3, 1e-4) == Approx(1e-4));
}

TEST_CASE("AdamW: one launch over a piece table equals the per-element formula", "[optim]") {
  // Three segments at different offsets in the three buffers (as under ZeRO), sizes
  // that no piece size divides; pieces of 3 elements, and of 4096 (one per segment).
  const std::vector<optim::Segment> segs = {{2, 0, 5, 7, true}, {11, 9, 0, 5, false}, {0, 20, 12, 1, true}};
  const int np = 16, ng = 21, ns = 13;
  optim::AdamWConfig cfg{0.9, 0.95, 1e-8, 0.1};
  optim::AdamW<double> small(ns, segs, cfg, 3), whole(ns, segs, cfg);
  Vec<double> p1("p1", np), p2("p2", np), g("g", ng);
  auto hp = Kokkos::create_mirror_view(p1);
  auto hg = Kokkos::create_mirror_view(g);
  std::vector<double> init(np);
  for (int i = 0; i < np; ++i) hp(i) = init[i] = 0.1 * i - 0.7;  // (hp may alias p1)
  for (int i = 0; i < ng; ++i) hg(i) = 0.05 * ((i * 7) % 11) - 0.2;
  Kokkos::deep_copy(p1, hp);
  Kokkos::deep_copy(p2, hp);
  Kokkos::deep_copy(g, hg);
  for (long step = 1; step <= 3; ++step) {
    small.update(p1, g, 0.01, step);
    whole.update(p2, g, 0.01, step);
  }
  auto r1 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), p1);
  auto r2 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), p2);
  // Reference: the same three steps element by element, in double.
  std::vector<double> ref = init;
  std::vector<bool> touched(np, false);
  for (const auto& s : segs)
    for (std::int64_t j = 0; j < s.size; ++j) {
      double m = 0, v = 0, x = ref[s.param_offset + j];
      const double gj = hg(s.grad_offset + j);
      for (int step = 1; step <= 3; ++step) {
        m = 0.9 * m + 0.1 * gj;
        v = 0.95 * v + 0.05 * gj * gj;
        const double mhat = m / (1 - std::pow(0.9, step)), vhat = v / (1 - std::pow(0.95, step));
        x -= 0.01 * (mhat / (std::sqrt(vhat) + 1e-8) + (s.decay ? 0.1 * x : 0.0));
      }
      ref[s.param_offset + j] = x;
      touched[s.param_offset + j] = true;
    }
  for (int i = 0; i < np; ++i) {
    CHECK(r1(i) == r2(i));  // the piece size changes nothing, bit for bit
    CHECK(r1(i) == Approx(ref[i]).epsilon(1e-5));  // moments are fp32
    if (!touched[i]) CHECK(r1(i) == init[i]);  // outside every segment: untouched
  }
}

TEST_CASE("fused norm: one pass by class equals a sum of squares per span", "[optim]") {
  // 10000 elements: class 1 on [100, 4300) and [9000, 9001), class 2 on [5000, 9000);
  // pieces cut at kNormPiece and at every class boundary.
  const std::int64_t n = 10000;
  const std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> classed = {
      {}, {{9000, 9001}, {100, 4300}}, {{5000, 9000}}};
  const auto pieces = kernels::norm_pieces(n, classed);
  std::int64_t covered = 0;
  for (const auto& pc : pieces) {
    CHECK(pc.begin == covered);  // in order, no gap, no overlap
    CHECK(pc.size <= kernels::kNormPiece);
    covered += pc.size;
  }
  CHECK(covered == n);
  Kokkos::View<kernels::NormPiece*, MemSpace> table("pieces", pieces.size());
  auto ht = Kokkos::create_mirror_view(table);
  for (std::size_t i = 0; i < pieces.size(); ++i) ht(i) = pieces[i];
  Kokkos::deep_copy(table, ht);
  Vec<float> g("g", n);
  auto hg = Kokkos::create_mirror_view(g);
  double expect[3] = {0, 0, 0};
  for (std::int64_t i = 0; i < n; ++i) {
    hg(i) = float(0.001 * double((i * 37) % 101) - 0.05);
    const int cls = (i >= 100 && i < 4300) || i == 9000 ? 1 : (i >= 5000 && i < 9000 ? 2 : 0);
    expect[cls] += double(hg(i)) * double(hg(i));
  }
  Kokkos::deep_copy(g, hg);
  const auto sq = kernels::class_squares<float>(table, g);
  for (int k = 0; k < 3; ++k) CHECK(sq[std::size_t(k)] == Approx(expect[k]).epsilon(1e-12));
  CHECK(sq[0] + sq[1] + sq[2] == Approx(kernels::sum_of_squares<float>(g)).epsilon(1e-12));
  // A NaN anywhere shows in its class, so the step guard sees it.
  hg(4999) = std::nanf("");
  Kokkos::deep_copy(g, hg);
  const auto bad = kernels::class_squares<float>(table, g);
  CHECK(std::isnan(bad[0]));
  CHECK(std::isfinite(bad[1]));
  CHECK(kernels::count_nonfinite(g) == 1);
}

TEST_CASE("AdamW: the clipping factor folded into the update equals clipping first", "[optim]") {
  // Bit for bit in fp32: the update reads g * f rounded as the clipping pass stored it.
  const std::vector<optim::Segment> segs = {optim::segment(0, 37, true), optim::segment(37, 20, false)};
  optim::AdamWConfig cfg{0.9, 0.95, 1e-8, 0.1};
  optim::AdamW<float> a(57, segs, cfg), b(57, segs, cfg);
  Vec<float> pa("pa", 57), pb("pb", 57), ga("ga", 57), gb("gb", 57);
  auto h = Kokkos::create_mirror_view(pa);
  auto hg = Kokkos::create_mirror_view(ga);
  for (int i = 0; i < 57; ++i) {
    h(i) = float(0.01 * i - 0.3);
    hg(i) = float(0.37 * ((i * 13) % 7) - 1.1);
  }
  Kokkos::deep_copy(pa, h);
  Kokkos::deep_copy(pb, h);
  Kokkos::deep_copy(ga, hg);
  Kokkos::deep_copy(gb, hg);
  const double n2 = std::sqrt(kernels::sum_of_squares<float>(ga));
  const double f = kernels::clip_factor(n2, 0.5);
  REQUIRE(f < 1.0);
  CHECK(kernels::clip_by_global_norm<float>(ga, n2, 0.5) == f);
  a.update(pa, ga, 0.01, 1);
  b.update(pb, gb, 0.01, 1, f);
  auto ra = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), pa);
  auto rb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), pb);
  for (int i = 0; i < 57; ++i) CHECK(ra(i) == rb(i));
  CHECK(kernels::clip_factor(0.4, 0.5) == 1.0);  // under the threshold
  CHECK(kernels::clip_factor(3.0, 0.0) == 1.0);  // 0 disables
  CHECK(kernels::clip_factor(std::nan(""), 0.5) == 1.0);  // a NaN step is skipped, not clipped
}
