// SPDX-License-Identifier: BSD-3-Clause
// The shape rules of a parallel layout, written once for both programs: every sharded
// dimension divides by the degree that shards it, and the pipeline schedule fits its
// stages and micro-batches (docs/parallelism.md). The runtime (grid/layout_rules) adds
// the rank count and the deck's name; the planner (plan/layout) adds what only a
// search needs (the cluster's size and nodes, the global batch, redundant names). So
// every plan the planner prints is one the runtime accepts, and the two say why a
// layout is refused in the same words. Pure C++: the planner links it without Kokkos.
#pragma once
#include <string>
#include <vector>

#include "mini5d/rules/stage_split.hpp"

namespace mini5d {

struct LayoutShape {
  long long d = 1, t = 1, p = 1, c = 1, e = 1, virtual_stages = 1;
  bool sp = false;           // sequence parallelism
  bool interleaved = false;  // the interleaved 1F1B schedule
  long long accumulation = 1;  // micro-batches per step
  StageLayers stage_layers;  // how the blocks are cut into stages (rules/stage_split.hpp)
};

struct ModelShape {
  long long heads = 0, ffn = 0, layers = 0, seq = 0;  // (any vocabulary is padded to fit t)
  long long experts = 0;  // 0: dense
  long long kv_heads = 0;  // key/value heads (grouped-query attention); 0: heads
};

// One line per broken rule, "parallel.t=2: must divide model.heads=3"; empty when the
// layout fits the model. Degrees are taken as >= 1 (the callers check that first).
std::vector<std::string> layout_shape_problems(const ModelShape& m, const LayoutShape& l);

}  // namespace mini5d
