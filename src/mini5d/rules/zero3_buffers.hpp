// SPDX-License-Identifier: BSD-3-Clause
// ZeRO 3's two gather buffers as a pure rule: which buffer a unit's weights are in or
// go to, and which unit to prefetch into the other one while it computes. The runtime
// (parallel/dp/zero_adamw_weights.cpp) follows the rule; the planner replays a step's
// schedule through the same rule (plan::zero3_gathers_per_step), so its prediction of
// the gathered bytes is exact, not a bound.
//
// A rank's local units are in model order; each belongs to one pipeline chunk. A
// forward visits a chunk's units in order, a backward in reverse, skipping the token
// embedding (its backward reads the token ids, not its weights). While a unit computes,
// the next unit the same pass visits is prefetched into the other buffer, unless it is
// there already; the last unit of a pass prefetches nothing (the next pass may be
// another chunk, or another micro-batch's).
//
// The buffers are dropped (drop()) when their weights may be stale or unneeded: before
// every micro-batch with one pipeline stage (its forward and backward run back to back,
// so the head and the last block are still there for the backward), and at the step's
// start and before every backward with more (forwards may find units a previous
// forward left).
#pragma once
#include <vector>

namespace mini5d::zero3 {

class GatherBuffers {
 public:
  GatherBuffers() = default;
  // chunk_of[u]: the pipeline chunk of local unit u; first_is_embedding: local unit 0
  // is the token embedding.
  GatherBuffers(std::vector<int> chunk_of, bool first_is_embedding);

  // What to do before unit `unit` computes in a forward (or backward) pass.
  struct Need {
    int buffer = 0;     // the buffer that holds (or will hold) the unit
    bool gather = false;  // not there: gather it into `buffer` now, and wait
    int prefetch = -1;  // a unit to gather into 1 - buffer meanwhile, or -1
  };
  Need need(int unit, bool forward);
  // Whether a backward of `unit` reads its weights (every unit but the embedding).
  bool backward_reads(int unit) const { return !(embedding_ && unit == 0); }
  void drop() { held_[0] = held_[1] = -1; }
  int units() const { return int(chunk_of_.size()); }

 private:
  int next(int unit, bool forward) const;
  std::vector<int> chunk_of_;
  bool embedding_ = false;
  int held_[2] = {-1, -1};
  int current_ = 0;  // the buffer of the unit computing now
};

}  // namespace mini5d::zero3
