// SPDX-License-Identifier: BSD-3-Clause
// Layout validation (docs/parallelism.md): every rule has its message, and a deck breaking
// several rules gets all of them at once.
#include <catch2/catch.hpp>

#include "mini5d/core/deck.hpp"
#include "mini5d/grid/layout_rules.hpp"

using namespace mini5d;

namespace {
// The single problem of a deck (from text) on `ranks` ranks.
std::string only_problem(const std::string& text, int ranks) {
  const auto p = grid::layout_problems(parse_deck(text, "l.yaml"), ranks);
  REQUIRE(p.size() == 1);
  return p[0];
}
const std::string kModel = "model:\n  vocab: 16\n  d_model: 64\n  layers: 6\n  heads: 4\n  seq: 32\n  ffn: 256\n";
}  // namespace

TEST_CASE("each layout rule names its field, value and what it must divide", "[grid]") {
  CHECK(grid::layout_problems(parse_deck(kModel + "parallel:\n  d: 2\n", "l.yaml"), 2).empty());
  CHECK(only_problem(kModel + "parallel:\n  d: 2\n", 3) ==
        "l.yaml: the layout d*t*p*c*e = 2 ranks, but mpiexec started 3");
  CHECK(only_problem("model:\n  vocab: 16\n  d_model: 96\n  heads: 3\n  ffn: 256\n  seq: 32\nparallel:\n  t: 2\n", 2) ==
        "l.yaml: parallel.t=2: must divide model.heads=3");
  CHECK(only_problem("model:\n  vocab: 16\n  ffn: 250\n  seq: 32\nparallel:\n  t: 4\n", 4) ==
        "l.yaml: parallel.t=4: must divide model.ffn=250");
  // A vocabulary t does not divide is padded (rules/vocab_padding.hpp), not refused.
  CHECK(grid::layout_problems(parse_deck("model:\n  vocab: 18\n  seq: 32\nparallel:\n  t: 4\n", "l.yaml"), 4).empty());
  CHECK(only_problem("model:\n  vocab: 16\n  seq: 30\nparallel:\n  t: 4\n", 4) ==
        "l.yaml: parallel.t=4: must divide model.seq=30 with parallel.sp=true (sequence parallelism splits "
        "the sequence; or set parallel.sp=false)");
  // Without sequence parallelism the sequence is not split.
  CHECK(grid::layout_problems(parse_deck("model:\n  vocab: 16\n  seq: 30\nparallel:\n  t: 4\n  sp: false\n", "l.yaml"), 4)
            .empty());
  // Any split of the blocks with at least one per virtual stage: 6 on 4 stages is fine.
  CHECK(grid::layout_problems(parse_deck(kModel + "parallel:\n  p: 4\n", "l.yaml"), 4).empty());
  CHECK(only_problem(kModel + "parallel:\n  p: 4\n  virtual_stages: 2\n", 4) ==
        "l.yaml: parallel.p=4: p*virtual_stages=8 must not exceed model.layers=6 (each virtual stage holds at least "
        "one block)");
  CHECK(grid::layout_problems(parse_deck(kModel + "parallel:\n  p: 2\n  stage_layers: [1, 5]\n", "l.yaml"), 2).empty());
  CHECK(only_problem(kModel + "parallel:\n  p: 2\n  stage_layers: [2, 3]\n", 2) ==
        "l.yaml: parallel.stage_layers: expected p*virtual_stages=2 positive block counts summing to model.layers=6, "
        "got 2 summing to 5");
  CHECK(only_problem(kModel + "parallel:\n  p: 2\n  stage_layers: 1,1,4\n", 2) ==
        "l.yaml: parallel.stage_layers: expected p*virtual_stages=2 positive block counts summing to model.layers=6, "
        "got 3 summing to 6");
  CHECK(grid::layout_problems(parse_deck(kModel + "parallel:\n  p: 3\n  virtual_stages: 2\n", "l.yaml"), 3).empty());
  CHECK(only_problem(kModel + "parallel:\n  virtual_stages: 2\n", 1) ==
        "l.yaml: parallel.virtual_stages=2: interleaving needs parallel.p > 1");
  // The interleaved schedule needs chunks to interleave, and micro-batches in groups of p.
  CHECK(only_problem(kModel + "parallel:\n  p: 2\n  schedule: interleaved\ntrain:\n  accumulation: 2\n", 2) ==
        "l.yaml: parallel.schedule=interleaved needs parallel.virtual_stages > 1 (got 1)");
  CHECK(only_problem(kModel + "parallel:\n  p: 3\n  virtual_stages: 2\n  schedule: interleaved\ntrain:\n  accumulation: 4\n", 3) ==
        "l.yaml: parallel.schedule=interleaved needs train.accumulation=4 (the micro-batches) divisible by parallel.p=3");
  CHECK(only_problem("model:\n  seq: 36\nparallel:\n  c: 4\n", 4) ==
        "l.yaml: parallel.c=4: 2*c=8 must divide model.seq=36");
  // Sequence parallelism splits each context rank's seq/c tokens over t.
  CHECK(only_problem("model:\n  vocab: 16\n  heads: 8\n  seq: 24\nparallel:\n  c: 2\n  t: 8\n  sp: true\n", 16) ==
        "l.yaml: parallel.t=8: must divide model.seq/c=12 with parallel.sp=true and parallel.c=2 (or set "
        "parallel.sp=false)");
  CHECK(only_problem(kModel + "parallel:\n  e: 2\n", 2) ==
        "l.yaml: parallel.e=2: expert parallelism needs model.experts > 0");
  CHECK(only_problem(kModel + "  experts: 6\nparallel:\n  e: 4\n", 4) ==
        "l.yaml: parallel.e=4: must divide model.experts=6");
  // Grouped-query attention: t splits the key/value heads (t <= kv_heads) or replicates
  // each over t/kv_heads ranks; 12 heads over 4 key/value heads at t = 6 is neither.
  const std::string gqa = "model:\n  vocab: 16\n  d_model: 48\n  heads: 12\n  seq: 24\n  ffn: 96\n  kv_heads: 4\n";
  CHECK(grid::layout_problems(parse_deck(gqa + "parallel:\n  t: 2\n", "l.yaml"), 2).empty());
  CHECK(grid::layout_problems(parse_deck(gqa + "parallel:\n  t: 12\n  sp: false\n", "l.yaml"), 12).empty());
  CHECK(only_problem(gqa + "parallel:\n  t: 6\n", 6) ==
        "l.yaml: parallel.t=6: must divide model.kv_heads=4 or be a multiple of it");
}

TEST_CASE("a deck breaking several rules gets every message", "[grid]") {
  const auto p = grid::layout_problems(
      parse_deck("model:\n  vocab: 18\n  heads: 4\n  layers: 6\n  seq: 32\nparallel:\n  t: 8\n  p: 8\n", "l.yaml"), 3);
  REQUIRE(p.size() == 3);
  CHECK(p[0] == "l.yaml: the layout d*t*p*c*e = 64 ranks, but mpiexec started 3");
  CHECK(p[1] == "l.yaml: parallel.t=8: must divide model.heads=4");
  CHECK(p[2] ==
        "l.yaml: parallel.p=8: p*virtual_stages=8 must not exceed model.layers=6 (each virtual stage holds at least "
        "one block)");
}
