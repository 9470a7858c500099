// SPDX-License-Identifier: BSD-3-Clause
// The unit of work AdamW and ZeRO share: a run of parameters with one decay setting and
// its offsets in the parameter, gradient and moment buffers. Apart from adamw.hpp so
// that parallel/dp (ZeRO's partition) can describe its shards without the optimizer.
#pragma once
#include <cstdint>

namespace mini5d::optim {

// A contiguous run of elements with its own decay setting, and where the run starts
// in each of the three buffers the update touches: parameters, gradients and the
// moments. Unsharded they coincide; under ZeRO the moments (stage 1), gradients
// (stage 2) and parameters (stage 3) are shard-local buffers with their own offsets.
struct Segment {
  std::int64_t param_offset, grad_offset, state_offset, size;
  bool decay;
};
// A segment at the same offset in all three buffers.
inline Segment segment(std::int64_t offset, std::int64_t size, bool decay) {
  return {offset, offset, offset, size, decay};
}

}  // namespace mini5d::optim
