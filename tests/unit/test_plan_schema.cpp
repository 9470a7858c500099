// SPDX-License-Identifier: BSD-3-Clause
// The planner reads decks with the runtime's own schema (the deck library both link):
// every field `mini5d deck-help` documents is one the planner accepts in a deck, and
// the planner's additions are its three train fields and model.name only.
#include <catch2/catch.hpp>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "mini5d/core/deck.hpp"
#include "mini5d/plan/inputs/input_schema.hpp"

TEST_CASE("the planner checks decks against the runtime's schema", "[deck][plan]") {
  std::vector<std::string> documented;  // "section.field", as deck-help prints them
  std::istringstream help(mini5d::deck_help());
  std::string section;
  for (std::string line; std::getline(help, line);) {
    if (!line.empty() && line.back() == ':' && line[0] != ' ') {
      section = line.substr(0, line.size() - 1);
    } else if (line.rfind("  ", 0) == 0 && line.size() > 2 && line[2] != ' ') {
      documented.push_back(section + "." + line.substr(2, line.find(' ', 2) - 2));
    }
  }
  REQUIRE(documented.size() > 40);  // the parse found the fields
  const auto& planner = mini5d::plan::deck_schema();
  auto has = [&](const std::string& sec, const std::string& key) {
    const auto it = planner.find(sec);
    return it != planner.end() && std::find(it->second.begin(), it->second.end(), key) != it->second.end();
  };
  for (const auto& f : documented) {
    const auto dot = f.find('.');
    INFO(f);
    CHECK(has(f.substr(0, dot), f.substr(dot + 1)));
    CHECK(has("", f.substr(0, dot)));
  }
  std::size_t planner_fields = 0;
  for (const auto& [sec, keys] : planner)
    if (!sec.empty()) planner_fields += keys.size();
  // model.name, and train.global_batch and train.fp32_grad_accum (train.precision is a
  // runtime field too): nothing else of the planner's own.
  CHECK(planner_fields == documented.size() + 3);
}
