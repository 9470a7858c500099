// SPDX-License-Identifier: BSD-3-Clause
// The activation memory a deck will need per rank, from the planner's formulas, and the
// start-up refusal of a deck whose prediction exceeds train.activation_budget_mib
// (checked by the app before any allocation, and again by the trainer).
#pragma once
#include <string>

#include "mini5d/core/deck.hpp"
#include "mini5d/plan/cost/layout.hpp"

namespace mini5d::train {

// Bytes of one micro-batch's activations on one rank.
struct ActivationMemory {
  double activations = 0, workspace = 0;
};

// The planner's prediction (plan/cost/memory_model.hpp) of the activations (one micro-batch's,
// times those in flight on a pipeline stage) and work buffers on one rank, for the
// layout's t, SP, c, p and recompute; what the model allocates is the same
// (Trainer::measured_activation_memory). `layout`: the run's, from the deck at start-up
// (train/deck_plan.hpp); the form without computes it from the deck.
ActivationMemory predicted_activation_memory(const Deck& deck, const plan::Layout& layout, int pipeline_stage);
ActivationMemory predicted_activation_memory(const Deck& deck, int pipeline_stage = 0);
// "" if the prediction fits train.activation_budget_mib (or there is no budget), else
// one line naming the field, the budget and the predicted memory.
std::string activation_budget_problem(const Deck& deck, const plan::Layout& layout);
std::string activation_budget_problem(const Deck& deck);

}  // namespace mini5d::train
