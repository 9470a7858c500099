// SPDX-License-Identifier: BSD-3-Clause
// Which input a problem with a resolved deck is blamed on. A rule that ties fields
// together (a layout rule, a feature this build lacks) is checked after the deck file
// and the command line are merged, so its message must say which of the two set the
// fields it names: "command line" when any of them was overridden there, else the deck
// file. Otherwise `parallel.stage_layers=[1,1]` typed on the command line reads as a
// fault in the deck (docs/inputs.md).
#pragma once
#include <string>
#include <vector>

#include "mini5d/core/deck.hpp"

namespace mini5d {

// The schema's "section.field" keys that `text` names as whole words (parallel.c is not
// named by parallel.collective_timeout_s).
std::vector<std::string> fields_named(const std::string& text);

// "command line" if a field `problem` names was set by one of `deck.overrides`, else
// `deck.origin`.
std::string blamed_origin(const Deck& deck, const std::string& problem);

}  // namespace mini5d
