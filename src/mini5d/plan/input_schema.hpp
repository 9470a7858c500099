// SPDX-License-Identifier: BSD-3-Clause
// The fields model files, decks and cluster files may hold, so that a misspelt
// optional field ("global_bach", "precison", "reservd_gib") is an error naming the
// field and the valid ones instead of a silent default.
//
// A deck (a file with a parallel: section) is the runtime's: its sections and fields
// are those of core/deck.cpp's schema, listed again here because the planner builds
// without the runtime; a test of the main suite (tests/test_plan_schema.cpp) checks
// the two lists agree. The planner adds its own train.{global_batch,precision,
// fp32_grad_accum} to both kinds of model input.
#pragma once
#include <map>
#include <string>
#include <vector>

namespace mini5d::plan {

// Path ("" for the top level, "device", "links.intra_node", ...) -> keys allowed in
// the map at that path. Maps at paths not listed are not checked (e.g. curve points).
using KeySchema = std::map<std::string, std::vector<std::string>>;

const KeySchema& model_file_schema();
const KeySchema& deck_schema();
const KeySchema& cluster_file_schema();

// The runtime's deck fields as "section.field", in schema order (for the agreement test).
std::vector<std::string> runtime_deck_fields();

}  // namespace mini5d::plan
