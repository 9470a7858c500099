// SPDX-License-Identifier: BSD-3-Clause
// User text as a message may quote it (a deck value, a path, the contents of `latest`):
// non-printable bytes (control characters, escape sequences, bytes of a binary file;
// UTF-8 is not decoded) as \xNN, and at most `max` bytes of it, so a 100 KB path or a
// binary "deck" still gives one readable line that cannot drive the terminal.
#pragma once
#include <cstdio>
#include <string>

namespace mini5d {

inline constexpr std::size_t kShownValue = 64;  // a field's value
inline constexpr std::size_t kShownPath = 200;  // a path

inline std::string printable(const std::string& v, std::size_t max = kShownValue) {
  std::string out;
  for (std::size_t i = 0; i < v.size() && i < max; ++i) {
    const auto c = static_cast<unsigned char>(v[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += char(c);
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    }
  }
  if (v.size() > max) out += "... (" + std::to_string(v.size()) + " bytes)";
  return out;
}

inline std::string printable_path(const std::string& p) { return printable(p, kShownPath); }

// A whole message as the programs print it (an error, a warning, a fatal line): its
// lines kept, every other control byte as \xNN. The net under the quoting above: a value
// some message forgot to quote can still not drive the terminal (ESC) or rewrite the
// line (CR); each value a message names must still be quoted where it is put in, since
// only there is a newline inside a value told from one between problems.
inline std::string printable_lines(const std::string& text) {
  std::string out;
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '\n' || (c >= 0x20 && c != 0x7f)) {
      out += ch;
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    }
  }
  return out;
}

}  // namespace mini5d
