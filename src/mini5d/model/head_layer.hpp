// SPDX-License-Identifier: BSD-3-Clause
// The head unit: final LayerNorm on this rank's token rows, the LM head (column-parallel
// over the vocabulary: each rank computes the logits of its V/t tokens for all N rows)
// and the vocab-parallel softmax cross-entropy, fused with its gradient.
#pragma once
#include "mini5d/model/layer_context.hpp"
#include "mini5d/model/tensors.hpp"
#include "mini5d/parallel/tp/vocab_cross_entropy.hpp"

namespace mini5d::model {

template <class S>
class HeadLayer {
 public:
  HeadLayer(Context<S>& ctx, Alloc& kept, Alloc& work);
  // Returns the summed token loss of the micro-batch; keeps dL/dlogits (scaled by
  // grad_scale per token) for backward().
  double forward(Context<S>& ctx, const OuterTensors<S>& w, CMatU<S> x_rows, CTokU targets, acc_t<S> grad_scale);
  // ctx.ws.dres = dL/d(x_rows).
  void backward(Context<S>& ctx, const OuterTensors<S>& w, OuterTensors<acc_t<S>>& g, CMatU<S> x_rows);

 private:
  Mat<S> lnf_, logits_;  // [rows, D], [N, V/t]
  Vec<acc_t<S>> mean_, rstd_;
  tp::CrossEntropyWork<S> ce_;
};

}  // namespace mini5d::model
