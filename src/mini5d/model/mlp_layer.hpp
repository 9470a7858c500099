// SPDX-License-Identifier: BSD-3-Clause
// The MLP half of a block: fc (column-parallel), GELU, and the projection back to
// d_model (row-parallel, its bias added once after the reduction); or, with
// model.mlp=swiglu, the gate and up projections as one column-parallel GEMM, silu(gate)
// * up, and the row-parallel down projection. Expert parallelism replaces this layer
// with a mixture of experts.
#pragma once
#include "mini5d/model/layer_context.hpp"
#include "mini5d/model/tensors.hpp"

namespace mini5d::model {

template <class S>
struct MlpLayer {
  // out_rows = proj(gelu(fc(x_rows))) or proj(silu(gate(x_rows)) * up(x_rows)) for this
  // rank's token rows (no residual).
  static void forward(Context<S>& ctx, MlpActs<S>& a, const MlpTensors<S>& w, MatU<S> out_rows, CMatU<S> x_rows);
  // dout_rows = dL/d(out_rows); dx_rows = dL/d(x_rows), overwritten.
  static void backward(Context<S>& ctx, MlpActs<S>& a, const MlpTensors<S>& w, MlpTensors<acc_t<S>>& g,
                       MatU<S> dx_rows, CMatU<S> dout_rows, CMatU<S> x_rows);
};

}  // namespace mini5d::model
