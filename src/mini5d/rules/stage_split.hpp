// SPDX-License-Identifier: BSD-3-Clause
// How a model's blocks are cut into pipeline stages, written once for the runtime and the
// planner (docs/parallelism.md, pipeline parallelism). The p*v virtual stages hold
// consecutive blocks; virtual stage 0 also holds the embeddings and the last one the
// head and the loss. parallel.stage_layers says how they are cut:
//   auto      the even split when p*v divides the layers (what Megatron does unless
//             told otherwise), else the balanced one;
//   balanced  the split of a modelled cost, forward FLOPs per token: the stage with the
//             most work sets the pipeline's pace, so it minimises the largest stage's
//             cost, and among the splits that reach it takes the most even one (least
//             sum of squared stage costs). A head heavier than a block (a large
//             vocabulary) gets its stage fewer blocks, as published runs do;
//   3,5       the blocks of each virtual stage, given.
// Pure C++: the planner links it too, so both programs cut the model alike.
#pragma once
#include <string>
#include <vector>

namespace mini5d {

struct SplitShape {
  long long layers = 0, d_model = 0, ffn = 0, vocab = 0, seq = 0;
  long long experts = 0, top_k = 1, moe_every = 1;  // experts 0: dense
  bool swiglu = false;                              // three MLP matrices instead of two
};

// Forward FLOPs per token the automatic split balances: a block's (attention GEMMs 8d^2,
// causal attention core 2d(T+1), MLP 4d*ffn (6d*ffn for SwiGLU), or top_k experts' MLPs and the router
// 2d*experts for an MoE block), the embeddings' (2d: a row gathered, a position added)
// and the head's (the logits' 2d*vocab).
double block_split_cost(const SplitShape& m, long long block);
double embedding_split_cost(const SplitShape& m);
double head_split_cost(const SplitShape& m);

// parallel.stage_layers: given counts, or auto / balanced when there are none (its
// spelling in a deck or on a command line: core/stage_layers_text.hpp).
struct StageLayers {
  std::vector<long long> counts;  // blocks per virtual stage, given
  bool balanced = false;          // no counts: balanced rather than auto
  bool given() const { return !counts.empty(); }
};

// Blocks per virtual stage, in virtual-stage order (S = p * virtual_stages entries,
// summing to m.layers), as `how` says. Needs 1 <= S <= m.layers (layout_shape_problems
// says so first).
std::vector<long long> stage_split(const SplitShape& m, long long S, const StageLayers& how = {});
// The balanced split alone.
std::vector<long long> balanced_split(const SplitShape& m, long long S);

// The blocks of each of pipeline rank `stage`'s chunks (local chunk j is virtual stage
// j*p + stage), and their sum.
std::vector<long long> chunk_blocks(const std::vector<long long>& split, int p, int stage);
long long stage_block_count(const std::vector<long long>& split, int p, int stage);
// First block of virtual stage vs.
long long first_block_of(const std::vector<long long>& split, int vs);
// Each virtual stage's modelled forward cost per token (the balanced split's measure:
// its blocks, the embeddings on the first, the head on the last), for the pipeline
// replay's predicted bubble (rules/pipeline_replay.hpp).
std::vector<double> virtual_stage_costs(const SplitShape& m, const std::vector<long long>& split);

}  // namespace mini5d
