// SPDX-License-Identifier: BSD-3-Clause
// The number formats rank 0's outputs share: printf-style fields for the console, and
// JSON numbers (%.9g, null for NaN or infinity) and strings for the report.
#pragma once
#include <cmath>
#include <cstdio>
#include <string>

#include "mini5d/core/json_text.hpp"

namespace mini5d::report {

inline std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}
inline std::string jstr(const std::string& s) { return json_quote(s); }
inline std::string jnum(double v) { return std::isfinite(v) ? fmt("%.9g", v) : "null"; }
inline std::string mib(double bytes) { return fmt("%.2f MiB", bytes / (1024.0 * 1024.0)); }

}  // namespace mini5d::report
