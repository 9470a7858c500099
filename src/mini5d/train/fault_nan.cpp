// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/train/fault_nan.hpp"

#include "mini5d/core/fault_spec.hpp"

namespace mini5d::train {

bool fault_nan_now(int world_rank, long step) {
  static const std::optional<FaultSpec> spec = fault_spec("MINI5D_FAULT_NAN", false);
  return spec && spec->rank == world_rank && spec->step == step;
}

}  // namespace mini5d::train
