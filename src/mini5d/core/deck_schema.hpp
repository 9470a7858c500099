// SPDX-License-Identifier: BSD-3-Clause
// The deck's field table, shared by the parser (deck.cpp) and the outputs generated
// from it (deck_output.cpp). Internal to the library: core/deck.hpp is the interface.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "mini5d/core/deck.hpp"

namespace mini5d::deck_schema {

// Counts: "auto" or a list of positive integers (a YAML list, or "3,5" on the command line).
// IntOrAuto: "auto" or an integer in [lo, hi].
enum class Kind { Int, Real, Text, Choice, Counts, IntOrAuto };

struct Field {
  std::string section, name;
  Kind kind;
  double lo, hi;                     // Int / IntOrAuto / Real range (inclusive)
  std::vector<std::string> choices;  // Choice
  std::string doc;
  std::function<void(Deck&, const std::string&)> set;  // value already validated
  std::function<std::string(const Deck&)> get;
  std::string key() const { return section + "." + name; }
};

// Shortest decimal that reads back as the same double: exact round trips in to_yaml,
// and "0.999999" rather than "0.99999899999999997" in messages.
std::string fmt_real(double v);
// The valid values of a field, as messages and deck-help say them.
std::string range_text(const Field& f);

// Every field, grouped by section in the order of Deck's sections.
const std::vector<Field>& schema();
const Field* find_field(const std::string& section, const std::string& name);  // nullptr: none
bool is_section(const std::string& s);
// "a, b, c": the fields of a section, and the sections, for messages.
std::string fields_of(const std::string& section);
std::string sections_text();

}  // namespace mini5d::deck_schema
