// SPDX-License-Identifier: BSD-3-Clause
// The known-bad snippet of scripts/lint-deck-strings.py: deck values compared as text,
// as the runtime and the planner did before the deck parsed its choices into enums, and
// the same tests written on the enums. Not built with the project; every line marked
// DECK-STRING must be flagged, the others not.
#include <string>

#include "mini5d/core/deck.hpp"

namespace mini5d {

int text_compares(const Deck& deck, const Deck* other, const std::string& att, const std::string& k) {
  int n = 0;
  if (deck.model.mlp == "swiglu") ++n;  // DECK-STRING
  if (deck.parallel.sp != "true") ++n;  // DECK-STRING
  if ("bf16" == deck.train.precision) ++n;  // DECK-STRING
  if ("true" == deck.parallel.force_placement) ++n;  // DECK-STRING
  if (other->parallel.schedule == "interleaved") ++n;  // DECK-STRING
  const auto& m = deck.model;
  n += m.tie_embeddings == "true" ? 1 : 0;  // DECK-STRING
  if (att != "blockwise" && att != "full") ++n;  // DECK-STRING
  if (k == "rmsnorm") ++n;  // DECK-STRING
  if (deck.output.kernel_profile == "auto" ||  // DECK-STRING
      deck.checkpoint.overwrite != "false")  // DECK-STRING
    ++n;
  return n;
}

int enum_compares(const Deck& deck, const std::string& key, const std::string& v) {
  int n = 0;
  if (deck.model.mlp == Mlp::swiglu) ++n;
  if (deck.parallel.sp) ++n;
  if (deck.train.precision != Precision::bf16) ++n;
  // A comment may say deck.model.norm == "rmsnorm" without being flagged.
  if (key == "recompute" || key == "schedule") ++n;  // field names, not values
  if (v == "on" || v == "true") ++n;  // a command-line word spelt like no deck choice
  if (deck.checkpoint.resume == "latest") ++n;  // a text field, not a choice
  if (v == "gpipe") ++n;  // deck-string: a test of the emitted deck's text
  return n;
}

}  // namespace mini5d
