// SPDX-License-Identifier: BSD-3-Clause
// The trainer's memory figures: training state and activations as the planner predicts
// them for this deck and rank (plan/cost/memory_model.hpp), beside what the memory ledger
// and the model measured.
#include "mini5d/core/memory_ledger.hpp"
#include "mini5d/plan/cost/memory_model.hpp"
#include "mini5d/train/deck_plan.hpp"
#include "mini5d/train/state_memory.hpp"
#include "mini5d/train/trainer.hpp"

namespace mini5d::train {

plan::StateBytes state_bytes(const Deck& deck, const plan::Layout& layout, double params, int group) {
  // bf16: a bf16 working copy, fp32 main gradients, fp32 master weights and moments.
  const bool bf = deck.train.precision == Precision::bf16;
  return plan::zero_state_bytes(params, layout.zero, group, bf ? Precision::bf16 : Precision::fp32,
                                bf);
}

StateMemory predicted_state(const Deck& deck, const plan::Layout& layout, const model::ParamLayout& params,
                            int dense_group, int expert_group) {
  // The planner's split (plan/cost/memory_model.cpp). bf16: a bf16 working copy, fp32
  // main gradients, fp32 master weights and moments.
  const double experts = double(params.expert_total());
  const auto b = state_bytes(deck, layout, double(params.total()) - experts, dense_group);
  const auto e = state_bytes(deck, layout, experts, expert_group);
  return {b.weights + e.weights, b.grads + e.grads, b.optimizer + e.optimizer};
}

StateMemory Trainer::predicted_state_memory() const {
  return predicted_state(deck_, layout_, base_->layout(), zero_->partition().group_size(),
                         zero_->partition().expert_group_size());
}

ActivationMemory Trainer::predicted_activation_memory() const {
  return train::predicted_activation_memory(deck_, layout_, grid_->coord(grid::Axis::p));
}

double Trainer::predicted_expert_params() const {
  const auto& m = deck_.model;
  if (m.experts == 0) return 0;
  int moe_blocks = 0;  // of this pipeline stage's units
  for (const auto& u : base_->layout().units())
    if (u.global >= 1 && u.global <= m.layers && model::is_moe_block(m, u.global - 1)) ++moe_blocks;
  return moe_blocks * plan::block_params(plan_model(deck_), layout_).expert;
}

double Trainer::measured_expert_params() const { return double(base_->layout().expert_total()); }

ActivationMemory Trainer::measured_activation_memory() const {
  return {double(base_->activation_bytes()), double(base_->workspace_bytes())};
}

StateMemory Trainer::measured_state_memory() const {
  const auto& l = mem::ledger();
  return {double(l.of(mem::Category::weights).current), double(l.of(mem::Category::gradients).current),
          double(l.of(mem::Category::optimizer).current)};
}

}  // namespace mini5d::train
