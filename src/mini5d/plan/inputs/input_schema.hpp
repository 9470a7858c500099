// SPDX-License-Identifier: BSD-3-Clause
// The fields model files, decks and cluster files may hold, so that a misspelt
// optional field ("global_bach", "precison", "reservd_gib") is an error naming the
// field and the valid ones instead of a silent default.
//
// A deck (a file with a parallel: section) is the runtime's: its sections and fields
// are read from the deck library's schema (core/deck_schema.cpp, which the planner
// links: it has no Kokkos or MPI in it). The planner adds its own
// train.{global_batch,precision,fp32_grad_accum} to both kinds of model input.
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

}  // namespace mini5d::plan
