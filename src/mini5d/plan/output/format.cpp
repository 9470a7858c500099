// SPDX-License-Identifier: BSD-3-Clause
// Formatting helpers (see format.hpp).
#include "mini5d/plan/output/format.hpp"

#include <cmath>
#include <cstdio>

namespace mini5d::plan {

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string gib(double bytes, int decimals) {
  return fixed(bytes / (1024.0 * 1024.0 * 1024.0), decimals) + " GiB";
}

std::string human_bytes(double bytes) {
  const char* units[] = {"B", "kB", "MB", "GB", "TB", "PB"};
  int i = 0;
  while (std::fabs(bytes) >= 1000 && i < 5) bytes /= 1000, ++i;
  return fixed(bytes, i == 0 ? 0 : 2) + " " + units[i];
}

std::string ms(double s, int decimals) {
  if (std::fabs(s) >= 10) return fixed(s, 2) + " s";
  if (std::fabs(s) < 1e-3 && s != 0) return fixed(s * 1e6, 0) + " us";
  return fixed(s * 1e3, decimals) + " ms";
}

std::string pct(double f, int decimals) { return fixed(100 * f, decimals) + "%"; }

std::string si(double v, const std::string& unit) {
  const char* p[] = {"", "k", "M", "G", "T", "P", "E"};
  int i = 0;
  while (std::fabs(v) >= 1000 && i < 6) v /= 1000, ++i;
  return fixed(v, 2) + " " + p[i] + unit;
}

}  // namespace mini5d::plan
