// SPDX-License-Identifier: BSD-3-Clause
// ZeRO 3's two gather buffers (rules/zero3_buffers.hpp), the rule the runtime
// follows and the planner replays: gathers per unit for one step, computed by hand
// here, on one stage and on the last of two; a prefetch never leaves its chunk nor
// fetches the embedding for a backward.
#include <catch2/catch.hpp>

#include "mini5d/rules/zero3_buffers.hpp"

using namespace mini5d;

TEST_CASE("a prefetch stays in its pass: not another chunk, not the embedding", "[zero3][buffers]") {
  zero3::GatherBuffers b({0, 0, 1}, true);
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
