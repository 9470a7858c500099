// SPDX-License-Identifier: BSD-3-Clause
// The training state one rank holds, as the planner counts it for the deck's precision
// and the layout's ZeRO stage: dense tensors sharded over the dense-gradient group,
// expert tensors over the expert-gradient group. One sum for the memory check before
// anything is allocated (train/startup/trainer_parts.cpp) and for the prediction the
// header prints beside the ledger (Trainer::predicted_state_memory).
#pragma once
#include "mini5d/core/deck.hpp"
#include "mini5d/plan/cost/layout.hpp"
#include "mini5d/train/run_record.hpp"

namespace mini5d::model {
class ParamLayout;  // params/param_layout.hpp, which train/ reaches through model/
}  // namespace mini5d::model

namespace mini5d::train {

StateMemory predicted_state(const Deck& deck, const plan::Layout& layout, const model::ParamLayout& params,
                            int dense_group, int expert_group);

}  // namespace mini5d::train
