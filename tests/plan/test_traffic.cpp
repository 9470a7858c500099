// SPDX-License-Identifier: BSD-3-Clause
// Bytes per axis that depend on where a rank sits in its ZeRO group
// (plan/axis_traffic.hpp), against hand computations: from ZeRO 2 on, a rank sums over
// t only the replicated gradients in its part of each unit.
#include <catch2/catch.hpp>

#include "mini5d/plan/axis_traffic.hpp"

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
