// SPDX-License-Identifier: BSD-3-Clause
// The embeddings unit: vocab-parallel token embedding plus learned positions (none with
// model.positions=rope: they turn q and k in attention instead), written
// to this rank's token rows (the input of block 0, kept for its backward).
#pragma once
#include "mini5d/model/layer_context.hpp"
#include "mini5d/model/tensors.hpp"

namespace mini5d::model {

template <class S>
class EmbeddingLayer {
 public:
  EmbeddingLayer(Context<S>& ctx, Alloc& kept);
  void forward(Context<S>& ctx, const OuterTensors<S>& w, CTokU tokens);
  // dx_rows = dL/d(out()).
  void backward(Context<S>& ctx, OuterTensors<acc_t<S>>& g, CMatU<S> dx_rows, CTokU tokens);
  CMatU<S> out() const { return x_; }

 private:
  Mat<S> x_;  // [rows, D]
};

}  // namespace mini5d::model
