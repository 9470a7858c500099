// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/core/stage_layers_text.hpp"

#include <cctype>

#include "mini5d/core/printable.hpp"

namespace mini5d {

std::string parse_stage_layers(const std::string& text, StageLayers& out) {
  out = StageLayers{};
  if (text == "auto") return "";
  if (text == "balanced") {
    out.balanced = true;
    return "";
  }
  std::vector<long long>& counts = out.counts;
  // A command-line override may carry the deck's list brackets: [3,5] as 3,5.
  std::string body = text;
  const auto first = body.find_first_not_of(' '), last = body.find_last_not_of(' ');
  if (first != std::string::npos && body[first] == '[' && body[last] == ']') body = body.substr(first + 1, last - first - 1);
  std::string item;
  auto take = [&]() -> std::string {
    if (item.empty()) return "an empty entry";
    for (char ch : item)
      if (!std::isdigit(static_cast<unsigned char>(ch))) return "\"" + printable(item) + "\" is not a positive integer";
    if (item.size() > 9 || std::stoll(item) < 1) return "\"" + printable(item) + "\" is not a positive integer below 10^9";
    counts.push_back(std::stoll(item));
    item.clear();
    return "";
  };
  for (char ch : body) {
    if (ch == ' ') continue;
    if (ch == ',') {
      if (auto why = take(); !why.empty()) return why;
    } else {
      item += ch;
    }
  }
  return take();
}

std::string format_counts(const std::vector<long long>& split) {
  std::string s;
  for (std::size_t i = 0; i < split.size(); ++i) s += (i ? "," : "") + std::to_string(split[i]);
  return s;
}

std::string format_stage_layers(const StageLayers& how) {
  if (how.given()) return format_counts(how.counts);
  return how.balanced ? "balanced" : "auto";
}

}  // namespace mini5d
