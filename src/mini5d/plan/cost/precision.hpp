// SPDX-License-Identifier: BSD-3-Clause
// Bytes per parameter and per activation element for each training precision.
//
// The headline figure of the seed articles, 16 bytes per parameter under AdamW, holds
// for both precisions mini5d cares about, for different reasons:
//   fp32      : weight 4 + gradient 4 + moments m,v 8            (the weight is the master)
//   bf16 mixed: weight 2 + gradient 2 + fp32 master 4 + moments 8 (Megatron/DeepSpeed)
//   fp64      : weight 8 + gradient 8 + moments 16               (mini5d's gradient checks)
// With fp32 gradient accumulation under bf16 the gradient is 4 bytes (18 B/param).
// ZeRO stage 1 shards "optimizer" (master + moments), stage 2 adds "grad", stage 3
// adds "weight"; see memory_model.hpp.
#pragma once
#include <string>

namespace mini5d::plan {

enum class Precision { fp32, bf16, fp64 };

struct StateBytesPerParam {
  double weight = 0, grad = 0, master = 0, moments = 0;
  double optimizer() const { return master + moments; }
  double total() const { return weight + grad + master + moments; }
};

StateBytesPerParam state_bytes_per_param(Precision p, bool fp32_grad_accum = false);

// Bytes of one stored activation element (also of one TP/CP/PP/EP message element).
double activation_elem_bytes(Precision p);
// Bytes of the type sums and statistics are kept in beside activations of `elem_bytes`:
// fp32 at least (a bf16 run's statistics, ring attention's travelling dK/dV).
inline double accumulation_bytes(double elem_bytes) { return elem_bytes > 4.0 ? elem_bytes : 4.0; }

const char* to_string(Precision p);
// Accepts fp32, bf16, fp64 (case-sensitive); returns false otherwise.
bool parse_precision(const std::string& s, Precision& out);

}  // namespace mini5d::plan
