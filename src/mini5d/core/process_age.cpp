// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/core/process_age.hpp"

#include <time.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>

namespace mini5d {

namespace {

const auto kLoaded = std::chrono::steady_clock::now();

// The process's start in seconds after boot, or a negative number if unknown.
double started_after_boot() {
  std::ifstream in("/proc/self/stat");
  std::string text;
  if (!std::getline(in, text)) return -1;
  // The command name (field 2) is in parentheses and may hold spaces: count from the
  // last ')'. The start time is field 22, the 20th after it.
  const auto close = text.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream fields(text.substr(close + 1));
  std::string f;
  for (int k = 3; k <= 22; ++k)
    if (!(fields >> f)) return -1;
  const long ticks = sysconf(_SC_CLK_TCK);
  if (ticks <= 0) return -1;
  try {
    return static_cast<double>(std::stoull(f)) / static_cast<double>(ticks);
  } catch (const std::exception&) {
    return -1;
  }
}

}  // namespace

double process_age_seconds() {
#ifdef CLOCK_BOOTTIME
  timespec now{};
  const double start = started_after_boot();
  if (start >= 0 && clock_gettime(CLOCK_BOOTTIME, &now) == 0) {
    const double age = static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec) - start;
    if (age >= 0) return age;
  }
#endif
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - kLoaded).count();
}

}  // namespace mini5d
