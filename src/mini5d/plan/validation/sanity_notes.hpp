// SPDX-License-Identifier: BSD-3-Clause
// Warnings about inputs that plan fine but describe a run nobody would make, so a typo
// or a unit slip (a sequence length of 1,000,000, a global batch a thousand times too
// large) is seen instead of silently planned: one line each, the plan still printed.
#pragma once
#include <string>
#include <vector>

#include "mini5d/plan/cost/model_desc.hpp"

namespace mini5d::plan {

struct Plan;

// Above this share of the parameters, the learned position table (seq x d_model)
// dominates the model: real models at such lengths use rotary positions (no table).
constexpr double kPositionShareWarn = 0.5;
// A step above this many seconds: no published run takes an hour per optimizer step.
constexpr double kStepSecondsWarn = 3600;

// The warnings for `m` and for the plan that will be printed (`best`; none if null),
// each one line without a prefix.
std::vector<std::string> sanity_notes(const ModelDesc& m, const Plan* best);

}  // namespace mini5d::plan
