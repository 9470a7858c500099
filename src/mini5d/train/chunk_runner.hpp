// SPDX-License-Identifier: BSD-3-Clause
// The model as the pipeline schedule drives it: a chunk's forward and backward on one
// micro-batch, with the activations that cross stages as byte views (the executor's
// messages, parallel/pp/stage.hpp). GptChunks adapts a model of any storage type: it
// hands its own buffers over, read as bytes, and reads what arrives as its storage
// type, so a bf16 model's boundary tensors travel in bf16.
#pragma once
#include <stdexcept>

#include "mini5d/kernels/views.hpp"
#include "mini5d/model/gpt.hpp"
#include "mini5d/parallel/pp/stage.hpp"

namespace mini5d::train {

using pp::Byte;

class ChunkRunner {
 public:
  virtual ~ChunkRunner() = default;
  virtual const model::Dims& dims() const = 0;  // this rank's shapes (tokens, rows, positions)
  // Bytes of one boundary tensor: [rows, d_model] in the model's storage type.
  virtual std::int64_t boundary_bytes() const = 0;
  // The chunk's summed token loss (the chunk with the head), else 0; `input`: the
  // previous chunk's output (empty for the chunk with the embeddings).
  virtual double forward(int chunk, int mb, CTok inputs, CVecU<Byte> input, CTokU targets, float grad_scale) = 0;
  // The chunk's output, kept until its backward.
  virtual CVecU<Byte> output(int chunk, int mb) = 0;
  // dL/d(input) for a chunk without the embeddings (empty otherwise).
  virtual CVecU<Byte> backward(int chunk, int mb, CVecU<Byte> grad_output) = 0;
};

template <class S>
class GptChunks final : public ChunkRunner {
 public:
  explicit GptChunks(model::Gpt<S>& model) : model_(model) {}
  const model::Dims& dims() const override { return model_.dims(); }
  std::int64_t boundary_bytes() const override {
    return std::int64_t(model_.dims().rows) * model_.dims().d_model * std::int64_t(sizeof(S));
  }
  double forward(int chunk, int mb, CTok inputs, CVecU<Byte> input, CTokU targets, float grad_scale) override {
    return model_.forward_chunk(chunk, mb, inputs, as_mat(input), targets, grad_scale);
  }
  CVecU<Byte> output(int chunk, int mb) override { return as_bytes(model_.chunk_output(chunk, mb)); }
  CVecU<Byte> backward(int chunk, int mb, CVecU<Byte> grad_output) override {
    return as_bytes(model_.backward_chunk(chunk, mb, as_mat(grad_output)));
  }

 private:
  // The executor's buffers come from Kokkos allocations, aligned for any S.
  CMatU<S> as_mat(CVecU<Byte> v) const {
    if (!v.data()) return CMatU<S>();
    const std::size_t cols = std::size_t(model_.dims().d_model);
    if (v.extent(0) % (cols * sizeof(S)) != 0)
      throw std::logic_error("mini5d: a pipeline boundary tensor is not whole rows of the model's storage type");
    return CMatU<S>(reinterpret_cast<const S*>(v.data()), v.extent(0) / (cols * sizeof(S)), cols);
  }
  static CVecU<Byte> as_bytes(CMatU<S> m) {
    if (!m.data()) return CVecU<Byte>();
    return CVecU<Byte>(reinterpret_cast<const Byte*>(m.data()), m.extent(0) * m.extent(1) * sizeof(S));
  }
  model::Gpt<S>& model_;
};

}  // namespace mini5d::train
