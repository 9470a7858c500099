// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/core/deck_blame.hpp"

#include <cctype>

#include "mini5d/core/deck_schema.hpp"

namespace mini5d {

std::vector<std::string> fields_named(const std::string& text) {
  std::vector<std::string> keys;
  auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'; };
  for (const auto& f : deck_schema::schema()) {
    const std::string k = f.key();
    for (auto at = text.find(k); at != std::string::npos; at = text.find(k, at + 1))
      if ((at == 0 || !word(text[at - 1])) && (at + k.size() == text.size() || !word(text[at + k.size()]))) {
        keys.push_back(k);
        break;
      }
  }
  return keys;
}

std::string blamed_origin(const Deck& deck, const std::string& problem) {
  const auto named = fields_named(problem);
  for (const auto& o : deck.overrides) {
    const std::string key = o.substr(0, o.find('='));
    for (const auto& k : named)
      if (k == key) return "command line";
  }
  return deck.origin;
}

}  // namespace mini5d
