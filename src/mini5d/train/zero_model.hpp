// SPDX-License-Identifier: BSD-3-Clause
// Where the model and ZeRO meet: what a Gpt must own for a ZeRO stage, and the view of it
// the optimizer works on (parallel/dp/zero_model.hpp). The optimizer keeps to flat
// buffers and units; only this glue knows both sides.
#pragma once
#include <vector>

#include "mini5d/model/gpt.hpp"
#include "mini5d/parallel/dp/zero_model.hpp"

namespace mini5d::train {

// What the Gpt must own for a ZeRO stage (construct it with this before the optimizer):
// the gradients live in ZeRO's shard from stage 2 on, the weights too at stage 3.
inline model::Owns model_ownership(int zero_stage) {
  if (zero_stage >= 3) return model::Owns::nothing;
  if (zero_stage == 2) return model::Owns::params;
  return model::Owns::params_and_grads;
}

template <class S>
dp::ZeroModel<S> zero_model(model::Gpt<S>& m) {
  dp::ZeroModel<S> z;
  const model::ParamLayout& layout = m.layout();
  z.layout = &layout;
  z.params = &m.params;
  z.grads = &m.grads;
  // Each local unit's chunk: a chunk runs its blocks, after the embeddings (global unit
  // 0) and before the head (layers + 1) when it holds them.
  z.chunk_of.assign(layout.units().size(), 0);
  const auto& chunks = m.chunks();
  for (int j = 0; j < int(chunks.size()); ++j) {
    const model::ChunkSpec& c = chunks[std::size_t(j)];
    const int first = c.embedding ? 0 : c.first_block + 1, last = c.head ? c.first_block + c.blocks + 1 : c.first_block + c.blocks;
    for (int g = first; g <= last; ++g)
      if (const int u = layout.local_unit(g); u >= 0) z.chunk_of[std::size_t(u)] = j;
  }
  z.sequence_parallel = m.sequence_parallel();
  z.bind_unit = [&m](int unit, S* params, float* grads) { m.bind_unit(unit, params, grads); };
  z.init_params = [&m](std::uint64_t seed) { m.init_params(seed); };
  z.init_range = [&layout](std::uint64_t seed, VecU<float> dst, std::int64_t begin, std::int64_t end) {
    model::init_param_range<float>(layout, seed, dst, begin, end);
  };
  z.zero_grads = [&m] { m.zero_grads(); };
  z.set_hooks = [&m](model::UnitHooks* hooks) { m.set_hooks(hooks); };
  return z;
}

}  // namespace mini5d::train
