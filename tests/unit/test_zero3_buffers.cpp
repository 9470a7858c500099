// SPDX-License-Identifier: BSD-3-Clause
// ZeRO 3's two gather buffers (parallel/dp/zero3_buffers.hpp), the rule the runtime
// follows and the planner replays: gathers per unit for one step, computed by hand
// here, on one stage and on the last of two; a prefetch never leaves its chunk nor
// fetches the embedding for a backward.
#include <catch2/catch.hpp>

#include "mini5d/parallel/dp/zero3_buffers.hpp"

using namespace mini5d;

TEST_CASE("one stage: the backward regathers only what the forward's two buffers lost", "[zero3][buffers]") {
  // Units: embedding, two blocks, head, in one chunk; two micro-batches. Per micro-batch
  // the forward gathers each unit once (the first on demand, the rest prefetched); the
  // backward finds the head and block 1 still there, prefetches block 0 again and
  // skips the embedding.
  const pp::Spec s{pp::Kind::one_f_one_b, 1, 1, 2};
  const auto n = dp::gathers_per_step(s, 0, {0, 0, 0, 0}, true);
  CHECK(n == std::vector<long long>{2, 4, 2, 2});
}

TEST_CASE("last of two stages: backwards start afresh, forwards reuse what is there", "[zero3][buffers]") {
  // Stage 1 of p = 2 with block 1 and the head; 1F1B runs F0 B0 F1 B1. F0 gathers the
  // block and prefetches the head; B0 drops both and gathers the head, prefetching the
  // block; F1 finds both; B1 again gathers both.
  const pp::Spec s{pp::Kind::one_f_one_b, 2, 1, 2};
  const auto n = dp::gathers_per_step(s, 1, {0, 0}, false);
  CHECK(n == std::vector<long long>{3, 3});
}

TEST_CASE("a prefetch stays in its pass: not another chunk, not the embedding", "[zero3][buffers]") {
  dp::GatherBuffers b({0, 0, 1}, true);
  auto e = b.need(0, true);  // the embedding: gathered, block 0 prefetched
  CHECK(e.gather);
  CHECK(e.prefetch == 1);
  auto b0 = b.need(1, true);  // chunk 0's last unit: chunk 1's block is not its pass
  CHECK_FALSE(b0.gather);
  CHECK(b0.buffer != e.buffer);
  CHECK(b0.prefetch == -1);
  b.drop();
  auto back = b.need(1, false);  // a backward of block 0: the embedding is not read
  CHECK(back.gather);
  CHECK(back.prefetch == -1);
  CHECK_FALSE(b.backward_reads(0));
  CHECK(b.backward_reads(2));
}
