// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/model/embedding_layer.hpp"

#include "mini5d/parallel/tp/vocab_embedding.hpp"

namespace mini5d::model {

template <class S>
EmbeddingLayer<S>::EmbeddingLayer(Context<S>& ctx, Alloc& kept)
    : x_(kept.mat<S>("mini5d::model::embedded", ctx.dims.rows, ctx.dims.d_model)) {}

template <class S>
void EmbeddingLayer<S>::forward(Context<S>& ctx, const OuterTensors<S>& w, CTokU tokens) {
  const Dims& d = ctx.dims;
  tp::vocab_embedding_forward<S>(ctx.region, x_, tokens, w.wte, d.vocab_begin, w.wpe, d.pos, d.row_begin);
}

template <class S>
void EmbeddingLayer<S>::backward(Context<S>& ctx, OuterTensors<acc_t<S>>& g, CMatU<S> dx_rows, CTokU tokens) {
  const Dims& d = ctx.dims;
  tp::vocab_embedding_backward<S>(ctx.region, g.wte, g.wpe, dx_rows, tokens, d.vocab_begin, d.pos, d.row_begin);
}

template class EmbeddingLayer<float>;
template class EmbeddingLayer<double>;
template class EmbeddingLayer<bf16>;

}  // namespace mini5d::model
