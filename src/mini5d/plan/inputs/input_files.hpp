// SPDX-License-Identifier: BSD-3-Clause
// Readers for model descriptions (a model file or any mini5d input deck) and cluster
// descriptions (inputs/clusters/*.yaml). Every problem is one line naming the file,
// the field and the valid range, thrown as InputError; the CLI prints it and exits 2.
//
// A deck is read as a model description: model.{vocab,d_model,layers,heads,seq,ffn}
// and optional model.{experts,top_k,tie_embeddings,attention,name}; the global batch is
// train.global_batch if present, else micro_batch * accumulation * d * e from the
// deck; train.precision (fp32|bf16|fp64) defaults to fp32, which is what mini5d runs.
// An unknown section or field is an error naming it and listing the valid ones (a
// misspelt field would otherwise plan silently with a default).
#pragma once
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "mini5d/plan/cost/cluster_desc.hpp"
#include "mini5d/plan/cost/layout.hpp"
#include "mini5d/plan/cost/model_desc.hpp"

namespace mini5d::plan {

struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Scalars of a deck section, in file order, as written (carried into emitted decks).
using DeckSection = std::vector<std::pair<std::string, std::string>>;

struct ModelInput {
  ModelDesc model;
  TrainDesc train;
  bool is_deck = false;      // had a parallel: section
  Layout deck_layout;        // its degrees, when is_deck
  DeckSection train_fields, data_fields, output_fields;  // when is_deck
};

// `source` names the text in messages (the file path).
ModelInput parse_model_text(const std::string& text, const std::string& source);
ModelInput load_model_file(const std::string& path);

ClusterDesc parse_cluster_text(const std::string& text, const std::string& source);
ClusterDesc load_cluster_file(const std::string& path);

// Checks the derived cluster (after command-line overrides such as --nodes).
void validate_cluster(const ClusterDesc& cl);
// Checks the model against itself (e.g. d_model % heads).
void validate_model(const ModelDesc& m, const TrainDesc& tr);

}  // namespace mini5d::plan
