// SPDX-License-Identifier: BSD-3-Clause
// The test-only fault injections read from the environment, "rank=R,step=S" with an
// optional ",seconds=X" (MINI5D_FAULT_NAN: a NaN in one rank's gradients; and
// MINI5D_FAULT_SLEEP: a rank that stalls, for the watchdog), parsed in one place. A
// malformed one is an error, not ignored: a test that meant to inject a fault must not
// pass because nothing was injected.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "mini5d/core/error.hpp"

namespace mini5d {

struct FaultSpec {
  int rank = -1;
  long step = -1;
  double seconds = 0;  // with_seconds only
};

// The spec in environment variable `var`, or none when it is not set.
inline std::optional<FaultSpec> fault_spec(const char* var, bool with_seconds) {
  const char* v = std::getenv(var);
  if (!v) return std::nullopt;
  FaultSpec f;
  int end = -1;
  const int got = with_seconds ? std::sscanf(v, "rank=%d,step=%ld,seconds=%lf%n", &f.rank, &f.step, &f.seconds, &end)
                               : std::sscanf(v, "rank=%d,step=%ld%n", &f.rank, &f.step, &end);
  if (got != (with_seconds ? 3 : 2) || end < 0 || v[end] != '\0')
    throw InputError(std::string(var) + "=" + v + ": expected rank=R,step=S" + (with_seconds ? ",seconds=X" : ""));
  return f;
}

}  // namespace mini5d
