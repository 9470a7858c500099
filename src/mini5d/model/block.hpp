// SPDX-License-Identifier: BSD-3-Clause
// One pre-norm transformer block on this rank's token rows:
//   res2 = x + attention(ln1(x)),  res3 = res2 + mlp(ln2(res2)),
// the norms LayerNorm or RMSNorm (model.norm), the MLP GELU or SwiGLU (model.mlp).
// LayerNorms and residual adds run outside the tensor-parallel regions, on N/t rows
// with sequence parallelism. The block keeps what its backward needs, according to
// the recomputation mode: everything (none); all but the attention core (selective,
// rebuilt from qkv in the backward); only its output (full: the forward is rerun from
// the block's input, which the previous unit keeps, into shared buffers; an MoE layer
// keeps its routing and routed rows in every mode and is not rerun).
#pragma once
#include <memory>

#include "mini5d/model/layer_context.hpp"
#include "mini5d/model/moe_layer.hpp"
#include "mini5d/model/tensors.hpp"

namespace mini5d::model {

template <class S>
class Block {
 public:
  // Allocates the activations this block keeps (their bytes go to `kept`); the
  // shared buffers in ctx.ws stand in for the rest. `moe` / `dense`: keep what a
  // mixture-of-experts MLP / a dense MLP needs (an activation set serves whichever block
  // runs in it: a block whose tensors have a router is an MoE block).
  Block(Context<S>& ctx, Alloc& kept, bool moe = false, bool dense = true);
  // out() = block(x_rows).
  void forward(Context<S>& ctx, const BlockTensors<S>& w, CMatU<S> x_rows);
  // ctx.ws.dres holds dL/d(out()) on entry and dL/d(x_rows) on return.
  void backward(Context<S>& ctx, const BlockTensors<S>& w, BlockTensors<acc_t<S>>& g, CMatU<S> x_rows);
  CMatU<S> out() const { return own_.res3; }
  // The MoE layer of this activation set (nullptr without MoE blocks); its routing is
  // the last MoE block's that ran here.
  const MoeLayer<S>* moe() const { return moe_.get(); }

 private:
  BlockActs<S>& acts(Context<S>& ctx);  // this block's, or the shared ones (full)
  // ln1, attention, res2 = x + attention, ln2: the forward up to the MLP's input.
  void attention_half(Context<S>& ctx, const BlockTensors<S>& w, CMatU<S> x_in);
  BlockActs<S> own_;
  std::unique_ptr<MoeLayer<S>> moe_;
};

}  // namespace mini5d::model
