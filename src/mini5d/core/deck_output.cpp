// SPDX-License-Identifier: BSD-3-Clause
// A deck written out (YAML that reads back as the same deck, JSON for reports) and
// `deck-help`, each generated from the schema table.
#include <cstdio>
#include <string>

#include "mini5d/core/deck.hpp"
#include "mini5d/core/deck_schema.hpp"
#include "mini5d/core/json_text.hpp"

namespace mini5d {

using deck_schema::Kind;
using deck_schema::range_text;
using deck_schema::schema;

namespace {

// A YAML double-quoted scalar that reads back as exactly `v`: quotes, backslashes and
// control characters escaped (a raw TAB or newline would be folded or rejected).
std::string yaml_quote(const std::string& v) {
  std::string q = "\"";
  for (char ch : v) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') {
      q += '\\';
      q += ch;
    } else if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", unsigned(c));
      q += buf;
    } else {
      q += ch;
    }
  }
  return q + "\"";
}

}  // namespace

std::string Deck::to_yaml() const {
  std::string out, section;
  for (const auto& f : schema()) {
    if (f.section != section) {
      section = f.section;
      out += section + ":\n";
    }
    std::string v = f.get(*this);
    if (f.kind == Kind::Text || f.kind == Kind::Choice) v = yaml_quote(v);
    if (f.kind == Kind::Counts && v != "auto" && v != "balanced") v = "[" + v + "]";
    out += "  " + f.name + ": " + v + "\n";
  }
  return out;
}

std::string Deck::to_json() const {
  std::string out = "{", section;
  for (const auto& f : schema()) {
    if (f.section != section) {
      out += (section.empty() ? "" : "}, ") + std::string("\"") + f.section + "\": {";
      section = f.section;
    } else {
      out += ", ";
    }
    std::string v = f.get(*this);
    const bool counts = f.kind == Kind::Counts && v != "auto" && v != "balanced";
    if (counts) v = "[" + v + "]";
    else if (f.kind == Kind::Text || f.kind == Kind::Choice || f.kind == Kind::Counts || v == "auto") v = json_quote(v);
    out += "\"" + f.name + "\": " + v;
  }
  return out + "}}";
}

std::vector<std::pair<std::string, std::vector<std::string>>> deck_sections() {
  std::vector<std::pair<std::string, std::vector<std::string>>> out;
  for (const auto& f : schema()) {
    if (out.empty() || out.back().first != f.section) out.push_back({f.section, {}});
    out.back().second.push_back(f.name);
  }
  return out;
}

std::string deck_help() {
  std::string out, section;
  for (const auto& f : schema()) {
    if (f.section != section) {
      section = f.section;
      out += section + ":\n";
    }
    out += "  " + f.name + " (" + range_text(f) + "; default " + f.get(Deck{}) + ")\n      " +
           f.doc + "\n";
  }
  return out;
}

}  // namespace mini5d
