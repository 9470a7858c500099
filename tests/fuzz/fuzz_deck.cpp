// SPDX-License-Identifier: BSD-3-Clause
// libFuzzer harness for the deck parser. The input is a deck's
// text, optionally followed by a NUL and NUL-separated command-line overrides. Every
// input must either parse or raise InputError with a message of printable lines; any
// other exception, a crash, a hang or a sanitizer report is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "mini5d/core/deck.hpp"
#include "mini5d/core/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string all(reinterpret_cast<const char*>(data), size);
  const auto nul = all.find('\0');
  const std::string text = all.substr(0, nul);
  std::vector<std::string> overrides;
  for (std::size_t at = nul; at != std::string::npos && at < all.size();) {
    const auto next = all.find('\0', at + 1);
    overrides.push_back(all.substr(at + 1, next == std::string::npos ? std::string::npos : next - at - 1));
    at = next;
  }
  try {
    const mini5d::Deck d = mini5d::parse_deck(text, "fuzz.yaml", overrides);
    // A deck that parses must survive its own YAML.
    (void)mini5d::parse_deck(d.to_yaml(), "round trip", {});
  } catch (const mini5d::InputError& e) {
    for (const char* p = e.what(); *p; ++p) {
      const auto c = static_cast<unsigned char>(*p);
      if (c != '\n' && (c < 0x20 || c >= 0x7f)) std::abort();  // raw input leaked into a message
    }
  }
  return 0;
}
