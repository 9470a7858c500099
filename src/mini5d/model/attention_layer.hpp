// SPDX-License-Identifier: BSD-3-Clause
// The attention half of a block: fused QKV (column-parallel by heads, so each rank
// computes whole heads and the attention core needs no communication), the causal
// attention core on this rank's heads, and the output projection (row-parallel, its
// bias added once after the reduction). Context parallelism replaces the core.
#pragma once
#include "mini5d/model/layer_context.hpp"
#include "mini5d/model/tensors.hpp"

namespace mini5d::model {

template <class S>
struct AttentionLayer {
  // out_rows = attention(x_rows) for this rank's token rows (no residual).
  static void forward(Context<S>& ctx, AttentionActs<S>& a, const AttentionTensors<S>& w, MatU<S> out_rows,
                      CMatU<S> x_rows);
  // dout_rows = dL/d(out_rows); dx_rows = dL/d(x_rows), overwritten.
  static void backward(Context<S>& ctx, AttentionActs<S>& a, const AttentionTensors<S>& w,
                       AttentionTensors<acc_t<S>>& g, MatU<S> dx_rows, CMatU<S> dout_rows, CMatU<S> x_rows);
};

}  // namespace mini5d::model
