// SPDX-License-Identifier: BSD-3-Clause
// JSON string literals from arbitrary bytes: quotes, backslashes and every control
// character are escaped, valid UTF-8 passes through, and a byte that is not part of a
// valid UTF-8 sequence becomes \u00XX (its Latin-1 reading), so the output is always
// valid JSON whatever a deck or a path held.
#pragma once
#include <cstdio>
#include <string>

namespace mini5d {

// Length of the valid UTF-8 sequence starting at s[i] (2-4), or 0 if there is none.
inline std::size_t utf8_sequence_length(const std::string& s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  std::size_t n = 0;
  unsigned lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) n = 2;
  else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;  // no overlong forms
    if (c == 0xED) hi = 0x9F;  // no surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  if (b(i + 1) < lo || b(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k)
    if (b(i + k) < 0x80 || b(i + k) > 0xBF) return 0;
  return n;
}

// `s` as a quoted JSON string.
inline std::string json_quote(const std::string& s) {
  std::string o = "\"";
  for (std::size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      o += '\\';
      o += static_cast<char>(c);
    } else if (c == '\n') {
      o += "\\n";
    } else if (c == '\t') {
      o += "\\t";
    } else if (c == '\r') {
      o += "\\r";
    } else if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", unsigned(c));
      o += buf;
    } else if (c < 0x80) {
      o += static_cast<char>(c);
    } else if (const std::size_t n = utf8_sequence_length(s, i); n > 0) {
      o.append(s, i, n);
      i += n;
      continue;
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", unsigned(c));
      o += buf;
    }
    ++i;
  }
  return o + "\"";
}

}  // namespace mini5d
