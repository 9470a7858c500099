// SPDX-License-Identifier: BSD-3-Clause
// What ZeRO needs of the model it optimises, and nothing more: the parameter layout it
// partitions, the flat buffers the model owns, each local unit's pipeline chunk, and the
// few calls that bind a unit to storage, draw initial values and install the hooks. The
// trainer fills it from the model (train/zero_model.hpp), so parallel/dp works on flat
// buffers and units and never sees the model's classes (docs/architecture.md, layering).
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "mini5d/kernels/bf16.hpp"
#include "mini5d/kernels/views.hpp"
#include "mini5d/params/param_layout.hpp"
#include "mini5d/params/unit_hooks.hpp"

namespace mini5d::dp {

// S: the model's storage type (float, or bf16 with fp32 master weights). Gradients are
// fp32 either way. The pointers and calls refer to the model, which outlives the optimizer.
template <class S>
struct ZeroModel {
  const model::ParamLayout* layout = nullptr;
  Vec<S>* params = nullptr;      // flat weights in layout order; empty when the model owns none
  Vec<float>* grads = nullptr;   // flat gradients likewise
  std::vector<int> chunk_of;     // [local unit]: its pipeline chunk (ZeRO 3's buffer rule)
  bool sequence_parallel = false;  // the replicated tensors' gradients are partial sums over t
  // Points unit `unit`'s parameter (or gradient) tensors at storage starting with the
  // unit's first element; nullptr leaves that side as it is.
  std::function<void(int unit, S* params, float* grads)> bind_unit;
  // The whole working copy from the counter RNG (what the model owns).
  std::function<void(std::uint64_t seed)> init_params;
  // fp32 initial values of flat elements [begin, end) into dst(0 .. end-begin): the same
  // values whichever rank or shard asks (a shard, or a bf16 model's master weights).
  std::function<void(std::uint64_t seed, VecU<float> dst, std::int64_t begin, std::int64_t end)> init_range;
  std::function<void()> zero_grads;
  std::function<void(model::UnitHooks* hooks)> set_hooks;  // nullptr: none
};

}  // namespace mini5d::dp
