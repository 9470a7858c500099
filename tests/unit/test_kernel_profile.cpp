// SPDX-License-Identifier: BSD-3-Clause
// The kernel table's inputs and arithmetic: each family's timer counts its calls and
// the exact work of the kernels it wraps (GEMM FLOPs 2mnk, the causal attention
// products' FLOPs with the skipped blocks left out), the roofline fraction against
// known ceilings, and the JSON record's shares.
#include <catch2/catch.hpp>
#include <sstream>

#include "mini5d/kernels/attention.hpp"
#include "mini5d/kernels/layernorm.hpp"
#include "mini5d/kernels/linear.hpp"
#include "mini5d/report/kernel_table.hpp"

using namespace mini5d;
namespace k = mini5d::kernels;

TEST_CASE("kernel timers count calls and GEMM FLOPs exactly", "[profile]") {
  const int N = 7, I = 5, O = 3;
  Mat<double> x("x", N, I), w("w", O, I), y("y", N, O), dx("dx", N, I), dw("dw", O, I);
  Vec<double> b("b", O), db("db", O), ones("ones", N);
  Kokkos::deep_copy(ones, 1.0);
  prof::profile().reset();
  k::linear_forward<double>(y, x, w, b);
  k::linear_backward<double>(dx, dw, db, y, x, w, ones);
  const auto& g = prof::profile().tally[int(prof::Family::gemm)];
  CHECK(g.calls == 3);  // forward, dx, dw
  CHECK(g.flops == 3 * 2.0 * N * I * O);
  const auto& bias = prof::profile().tally[int(prof::Family::bias)];
  CHECK(bias.calls == 2);  // the add and the gradient
  CHECK(g.seconds >= 0);
}

TEST_CASE("attention timers count only the causal blocks computed", "[profile]") {
  // T = 10 in blocks of 4: query blocks meet 4, 8 and 10 keys.
  const int BH = 2, T = 10, hd = 3, blk = 4;
  Ten3<double> q("q", BH, T, hd), kk("k", BH, T, hd), v("v", BH, T, hd), y("y", BH, T, hd), p("p", BH, T, T);
  Kokkos::deep_copy(q, 0.1);
  Kokkos::deep_copy(kk, 0.2);
  Kokkos::deep_copy(v, 0.3);
  prof::profile().reset();
  k::attention_forward<double>(y, p, q, kk, v, blk);
  const double keys = 4 * 4 + 4 * 8 + 2 * 10;  // query rows x keys they meet
  const auto& a = prof::profile().tally[int(prof::Family::attention_gemm)];
  CHECK(a.calls == 2);
  CHECK(a.flops == BH * 2 * (2.0 * keys * hd));  // QK^T and PV
  CHECK(prof::profile().tally[int(prof::Family::attention)].calls == 1);  // the softmax
}

TEST_CASE("roofline fraction and the JSON record from known figures", "[profile]") {
  measure::Ceilings c;
  c.gemm_gflops = 100;
  c.stream_gbs = 20;
  prof::Tally gemm{2.0, 100e9, 1e9, 4};     // 50 GFLOP/s: half the peak
  prof::Tally stream{1.0, 1e9, 10e9, 2};    // 10 GB/s at 0.1 FLOP/B: half the roof
  CHECK(report::roofline_fraction(gemm, true, c) == Approx(0.5));
  CHECK(report::roofline_fraction(stream, false, c) == Approx(0.5));
  report::KernelTable t;
  t.profile.tally[int(prof::Family::gemm)] = gemm;
  t.profile.tally[int(prof::Family::layernorm)] = stream;
  t.step_seconds = 4.0;
  t.steps = 2;
  t.ceilings = c;
  const std::string j = report::kernel_table_json(t);
  CHECK(j.find("\"name\": \"gemm\", \"bound\": \"compute\", \"seconds_per_step\": 1, \"share\": 0.5") != std::string::npos);
  CHECK(j.find("\"gemm_share\": 0.5") != std::string::npos);
  CHECK(j.find("\"other_seconds_per_step\": 0.5") != std::string::npos);
}

TEST_CASE("ceilings below a kernel's rate are stale: no fraction above 100% is shown", "[profile]") {
  measure::Ceilings c;
  c.gemm_gflops = 20;  // measured under load: the GEMMs below run at 50 GFLOP/s
  c.stream_gbs = 20;
  c.source = "ceilings.json";
  report::KernelTable t;
  t.profile.tally[int(prof::Family::gemm)] = prof::Tally{2.0, 100e9, 1e9, 4};
  t.step_seconds = 4.0;
  t.steps = 2;
  t.ceilings = c;
  CHECK(report::stale_ceilings(t) == "gemm ran at 250% of the sgemm rate");
  std::ostringstream table;
  report::print_kernel_table(table, t);
  INFO(table.str());
  CHECK(table.str().find("ceilings.json are stale, gemm ran at 250% of the sgemm rate: re-measure with `mini5d ceilings`") !=
        std::string::npos);
  CHECK(table.str().find("250.0%") == std::string::npos);
  CHECK(table.str().find(" stale\n") != std::string::npos);
  const std::string j = report::kernel_table_json(t);
  CHECK(j.find("\"stale\": \"gemm ran at 250% of the sgemm rate\"") != std::string::npos);
  CHECK(j.find("\"roofline_fraction\": null") != std::string::npos);

  // Fresh ceilings that hold every kernel: not stale, fractions shown.
  t.ceilings->gemm_gflops = 100;
  CHECK(report::stale_ceilings(t).empty());
  CHECK(report::kernel_table_json(t).find("\"stale\": null") != std::string::npos);
  // A memory-bound family above the stream roof ran from cache: not stale, no fraction.
  t.profile.tally[int(prof::Family::layernorm)] = prof::Tally{0.5, 1e9, 20e9, 2};  // 40 GB/s over a 20 GB/s roof
  CHECK(report::stale_ceilings(t).empty());
  CHECK(report::kernel_table_json(t).find("\"roofline_fraction\": null, \"in_cache\": true") != std::string::npos);
  std::ostringstream cached;
  report::print_kernel_table(cached, t);
  CHECK(cached.str().find(" cache\n") != std::string::npos);
  // A cache marked stale (another host, older than the build) is stale whatever the rates.
  t.ceilings->stale = "measured on host elsewhere, not here";
  CHECK(report::stale_ceilings(t) == "measured on host elsewhere, not here");
}
