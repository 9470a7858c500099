// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/train/fault_nan.hpp"

#include <cstdio>
#include <cstdlib>

namespace mini5d::train {

bool fault_nan_now(int world_rank, long step) {
  static const char* spec = std::getenv("MINI5D_FAULT_NAN");
  if (!spec) return false;
  int rank = -1;
  long at = -1;
  if (std::sscanf(spec, "rank=%d,step=%ld", &rank, &at) != 2) return false;
  return rank == world_rank && step == at;
}

}  // namespace mini5d::train
