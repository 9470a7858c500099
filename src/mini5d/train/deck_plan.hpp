// SPDX-License-Identifier: BSD-3-Clause
// A deck seen by the planner: its model as a plan::ModelDesc and its parallel section
// as a plan::Layout, so that the runtime can print the planner's predictions (memory,
// bytes per axis) for the very layout it runs, beside what it measured.
#pragma once
#include "mini5d/core/deck.hpp"
#include "mini5d/plan/cost/layout.hpp"
#include "mini5d/plan/cost/model_desc.hpp"

namespace mini5d::train {

plan::ModelDesc plan_model(const Deck& deck);
plan::Layout plan_layout(const Deck& deck);

}  // namespace mini5d::train
