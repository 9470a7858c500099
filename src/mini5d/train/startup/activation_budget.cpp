// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/train/startup/activation_budget.hpp"

#include <cstdio>

#include "mini5d/plan/cost/axis_traffic.hpp"
#include "mini5d/plan/cost/memory_model.hpp"
#include "mini5d/train/deck_plan.hpp"

namespace mini5d::train {

ActivationMemory predicted_activation_memory(const Deck& deck, const plan::Layout& l, int stage) {
  // The planner's shapes for this deck: dense blocks, and MoE blocks where the model
  // has experts (every moe_every-th), with a router that balances its load.
  const plan::ModelDesc md = plan_model(deck);
  plan::ActShape moe =
      plan::act_shape(md, l, deck.train.precision == Precision::bf16 ? Precision::bf16 : Precision::fp32);
  moe.widened_core = true;  // this runtime's bf16 core (kernels/widened_attention.hpp)
  plan::ActShape dense = moe;
  dense.experts = 0;
  const auto blocks = plan::stage_blocks(md, l, stage, deck.model.moe_every);
  // The stage's blocks, its embeddings or head, each times its sets in flight.
  const plan::InFlight f = plan::in_flight(md, l, stage, deck.model.moe_every);
  double kept = f.blocks * (blocks.dense * plan::block_activation_bytes(dense, l.recompute) +
                            blocks.moe * plan::block_activation_bytes(moe, l.recompute));
  if (blocks.embedding) kept += f.embedding * plan::embedding_activation_bytes(dense);
  if (blocks.head) kept += f.head * plan::head_activation_bytes(dense);
  return {kept, plan::workspace_bytes(dense, l.recompute)};
}

ActivationMemory predicted_activation_memory(const Deck& deck, int stage) {
  return predicted_activation_memory(deck, plan_layout(deck), stage);
}

std::string activation_budget_problem(const Deck& deck) { return activation_budget_problem(deck, plan_layout(deck)); }

std::string activation_budget_problem(const Deck& deck, const plan::Layout& l) {
  const double budget = deck.train.activation_budget_mib;
  if (budget <= 0) return "";
  // The fullest pipeline stage (the only one without a pipeline).
  ActivationMemory p;
  for (int stage = 0; stage < l.p; ++stage) {
    const auto q = predicted_activation_memory(deck, l, stage);
    if (q.activations + q.workspace > p.activations + p.workspace) p = q;
  }
  const double mib = 1024.0 * 1024.0, total = (p.activations + p.workspace) / mib;
  if (total <= budget) return "";
  // Full attention at c = 1 is the one core that keeps seq x seq probabilities.
  const bool full = l.c == 1 && deck.model.attention == Attention::full;
  char line[640];
  std::snprintf(line, sizeof line,
                "%s: train.activation_budget_mib=%g: the predicted activation memory per rank is %.1f MiB "
                "(kept %.1f + work buffers %.1f) at parallel.c=%d, parallel.t=%d, train.micro_batch=%d; %sraise "
                "parallel.c (ring attention splits the sequence and keeps no seq x seq probabilities) or lower "
                "train.micro_batch",
                deck.origin.c_str(), budget, total, p.activations / mib, p.workspace / mib, l.c, l.t,
                deck.train.micro_batch,
                full ? "set model.attention=blockwise (keeps no seq x seq probabilities), " : "");
  return line;
}

}  // namespace mini5d::train
