// SPDX-License-Identifier: BSD-3-Clause
// Bytes per axis against hand computations (plan/cost/axis_traffic.hpp): from ZeRO 2 on, a
// rank sums over t only the replicated gradients in its part of each unit; ZeRO 3's
// gathers per unit in a step, the runtime's two-buffer rule replayed over a schedule.
#include <catch2/catch.hpp>

#include "mini5d/plan/cost/axis_traffic.hpp"
#include "mini5d/plan/cost/time_model.hpp"
#include "plan_test_util.hpp"

using namespace mini5d::plan;

namespace {
// GPT-2 block, vocab 64, D 32, 2 layers, T 16, F 128: per tensor rank at t = 2,
//   embeddings: 64*32/2 + the position table 16*32 = 1536 elements, 512 replicated;
//   a block: (3*32*32 + 96 + 32*32)/2 + (128*32 + 128 + 32*128)/2 + LN1, LN2 (128) and
//     the two projection biases (64) = 6448, 192 replicated;
//   head: LNf (64) + 64*32/2 = 1088, 64 replicated.
ModelDesc small() {
  ModelDesc m;
  m.vocab = 64, m.d_model = 32, m.layers = 2, m.heads = 2, m.seq = 16, m.ffn = 128;
  return m;
}
double t_grads(int d, int zero, int rank) {
  Layout l;
  l.d = d, l.t = 2, l.sp = true, l.zero = zero;
  return step_traffic(small(), l, 0, 1, 0, 0, 4, rank).tp_grads;
}
}  // namespace

TEST_CASE("ZeRO 2-3 with t > 1: each rank sums over t the replicated gradients of its part", "[plan][traffic]") {
  const double all = 4 * (512 + 2 * 192 + 64);  // ZeRO 0-1: every replicated element
  CHECK(t_grads(2, 1, 0) == all);
  CHECK(t_grads(2, 1, 1) == all);
  // d = 2: rank 0's part of every unit holds the whole leading replicated run.
  CHECK(t_grads(2, 2, 0) == all);
  CHECK(t_grads(2, 3, 1) == 0);
  // d = 4: the embeddings' 512 replicated elements span parts 0 (384) and 1 (128).
  CHECK(t_grads(4, 2, 0) == 4 * (384 + 2 * 192 + 64));
  CHECK(t_grads(4, 2, 1) == 4 * 128);
  CHECK(t_grads(4, 2, 2) == 0);
  double sum = 0;
  for (int r = 0; r < 4; ++r) sum += t_grads(4, 3, r);
  CHECK(sum == all);
}

TEST_CASE("one stage: the backward regathers only what the forward's two buffers lost", "[plan][traffic]") {
  // Units: embedding, two blocks, head, in one chunk; two micro-batches. Per micro-batch
  // the forward gathers each unit once (the first on demand, the rest prefetched); the
  // backward finds the head and block 1 still there, prefetches block 0 again and
  // skips the embedding.
  const mini5d::pp::Spec s{mini5d::Schedule::one_f_one_b, 1, 1, 2};
  const auto n = zero3_gathers_per_step(s, 0, {0, 0, 0, 0}, true);
  CHECK(n == std::vector<long long>{2, 4, 2, 2});
}

TEST_CASE("last of two stages: backwards start afresh, forwards reuse what is there", "[plan][traffic]") {
  // Stage 1 of p = 2 with block 1 and the head; 1F1B runs F0 B0 F1 B1. F0 gathers the
  // block and prefetches the head; B0 drops both and gathers the head, prefetching the
  // block; F1 finds both; B1 again gathers both.
  const mini5d::pp::Spec s{mini5d::Schedule::one_f_one_b, 2, 1, 2};
  const auto n = zero3_gathers_per_step(s, 1, {0, 0}, false);
  CHECK(n == std::vector<long long>{3, 3});
}

TEST_CASE("tied embeddings: the pipeline's two ends sum the embedding's gradient once a step", "[plan][traffic]") {
  ModelDesc m = small();
  m.tie_embeddings = true;
  m.layers = 3;  // a block per stage: p may not exceed the blocks
  Layout l;
  l.p = 3, l.t = 2, l.accumulation = 3;
  // V/t * D fp32 gradients on the first and the last stage, none in the middle; the
  // boundary activations are the same as untied.
  const double tie = 4.0 * 64 * 32 / 2;
  ModelDesc untied = small();
  untied.layers = 3;
  for (int stage = 0; stage < 3; ++stage) {
    const AxisTraffic a = step_traffic(m, l, stage, 1, 0, 0, 4);
    const AxisTraffic u = step_traffic(untied, l, stage, 1, 0, 0, 4);
    CHECK(a.pp_activations == u.pp_activations);
    CHECK(a.pp_grads == (stage == 1 ? 0.0 : tie));
    CHECK(a.pp() == a.pp_activations + a.pp_grads);
    CHECK(u.pp_grads == 0);
  }
  // One stage: the head uses wte itself, nothing to sum.
  l.p = 1;
  CHECK(step_traffic(m, l, 0, 1, 0, 0, 4).pp() == 0);
  // The last stage holds LNf and its copy of wte as its head unit.
  l.p = 2;
  const auto units = stage_units(m, l, 1, 1);
  CHECK(units.back().dense == 64 + 64 * 32 / 2);
}

TEST_CASE("the time model's ring carries axis_traffic's bytes: the local K/V heads, dK/dV at 4 bytes",
          "[plan][traffic][time]") {
  // plan_test::cp_toy: a K/V block is 65536 bytes (d_model/t would be 8x that), the
  // travelling dK/dV 131072 (fp32). Per block c - 1 = 3 hops forward (K/V), 3 backward
  // (K/V and dK/dV in one message), and 3 more with the forward recomputed. On the toy
  // node's 100 GB/s, 1 us link every hop is 1 us + bytes / 1e11.
  plan_test::CpToy x = plan_test::cp_toy();
  const ModelDesc& m = x.m;
  const TrainDesc& tr = x.tr;
  Layout& l = x.l;
  const ClusterDesc cl = plan_test::toy_cluster(1, 8, 80);
  const double kv = x.kv, dkv = x.dkv, hop = 1e-6;
  for (const Recompute r : {Recompute::none, Recompute::selective}) {
    l.recompute = r;
    const double passes = r == Recompute::none ? 2 : 3;  // K/V passes per block
    const double bytes = 2 * 3 * (passes * kv + dkv);
    const TimeBreakdown tb = step_time(m, tr, cl, l, {});
    INFO("recompute " << (r == Recompute::none ? "none" : "selective"));
    CHECK(tb.cp_total == Approx(2 * 3 * passes * hop + bytes / 1e11).epsilon(1e-12));
    CHECK(step_traffic(m, l, 0, 1, 0, 0, 2).cp_activations == bytes);
  }
}
