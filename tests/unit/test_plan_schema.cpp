// SPDX-License-Identifier: BSD-3-Clause
// The planner holds its own copy of the runtime deck's field list (it builds without
// the runtime) to refuse misspelt fields in decks it reads; this checks the copy
// against the runtime's schema, as `mini5d deck-help` prints it, field for field.
#include <catch2/catch.hpp>

#include <sstream>
#include <string>
#include <vector>

#include "mini5d/core/deck.hpp"
#include "mini5d/plan/input_schema.hpp"

TEST_CASE("the planner's deck field list is the runtime's", "[deck][plan]") {
  std::vector<std::string> runtime;
  std::istringstream help(mini5d::deck_help());
  std::string section;
  for (std::string line; std::getline(help, line);) {
    if (!line.empty() && line.back() == ':' && line[0] != ' ') {
      section = line.substr(0, line.size() - 1);
    } else if (line.rfind("  ", 0) == 0 && line.size() > 2 && line[2] != ' ') {
      runtime.push_back(section + "." + line.substr(2, line.find(' ', 2) - 2));
    }
  }
  REQUIRE(runtime.size() > 40);  // the parse found the fields
  CHECK(runtime == mini5d::plan::runtime_deck_fields());
}
