// SPDX-License-Identifier: BSD-3-Clause
// --emit-deck: a mini5d input deck for a plan, with the sections and fields of
// inputs/tiny.yaml (model, parallel, train, data, output) plus the fields the plan
// needs (parallel.virtual_stages, parallel.ranks_per_node, train.recompute, and
// model.experts/top_k for MoE). When the model came from a deck its train/data/output
// values are carried over. --scale-down keeps the plan's knobs but shrinks the model
// and sets every degree to 1, so the deck runs on a single rank in seconds.
#pragma once
#include <ostream>

#include "mini5d/plan/inputs/input_files.hpp"
#include "mini5d/plan/search/search.hpp"

namespace mini5d::plan {

void write_deck(std::ostream& os, const ModelInput& in, const ClusterDesc& cl, const Plan& p,
                bool scale_down);

}  // namespace mini5d::plan
