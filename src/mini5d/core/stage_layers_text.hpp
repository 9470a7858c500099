// SPDX-License-Identifier: BSD-3-Clause
// parallel.stage_layers as text, the one spelling the deck, the command line and the
// planner's inputs share: "auto", "balanced", or the blocks of each virtual stage as
// positive integers separated by commas ("3,5", or "[3,5]" as an override may quote the
// deck's list). The split itself is a rule (rules/stage_split.hpp); this is its input
// and output, which quotes the user's text in its messages.
#pragma once
#include <string>
#include <vector>

#include "mini5d/rules/stage_split.hpp"

namespace mini5d {

// Returns "" on success, else why (for the caller's one-line message).
std::string parse_stage_layers(const std::string& text, StageLayers& out);
std::string format_stage_layers(const StageLayers& how);      // "auto", "balanced" or "3,5"
std::string format_counts(const std::vector<long long>& split);  // "3,5"

}  // namespace mini5d
