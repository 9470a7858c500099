// SPDX-License-Identifier: BSD-3-Clause
// The model as the pipeline schedule drives it: a chunk's forward and backward on one
// micro-batch, with the activations that cross stages as fp32 views (the executor's
// messages, parallel/pp). GptChunks adapts a model of any storage type: an fp32 model
// hands its own buffers over; a bf16 model runs at p = 1 only for now (the deck refuses
// bf16 at p > 1), where no activation leaves the rank.
#pragma once
#include <stdexcept>

#include "mini5d/kernels/views.hpp"
#include "mini5d/model/gpt.hpp"

namespace mini5d::train {

class ChunkRunner {
 public:
  virtual ~ChunkRunner() = default;
  virtual const model::Dims& dims() const = 0;  // this rank's shapes (tokens, rows, positions)
  // The chunk's summed token loss (the chunk with the head), else 0; `input`: the
  // previous chunk's output (empty for the chunk with the embeddings).
  virtual double forward(int chunk, int mb, CTok inputs, CVecU<float> input, CTokU targets, float grad_scale) = 0;
  // The chunk's output, kept until its backward.
  virtual CVecU<float> output(int chunk, int mb) = 0;
  // dL/d(input) for a chunk without the embeddings (empty otherwise).
  virtual CVecU<float> backward(int chunk, int mb, CVecU<float> grad_output) = 0;
};

template <class S>
class GptChunks final : public ChunkRunner {
 public:
  explicit GptChunks(model::Gpt<S>& model) : model_(model) {}
  const model::Dims& dims() const override { return model_.dims(); }
  double forward(int chunk, int mb, CTok inputs, CVecU<float> input, CTokU targets, float grad_scale) override {
    return model_.forward_chunk(chunk, mb, inputs, as_mat(input), targets, grad_scale);
  }
  CVecU<float> output(int chunk, int mb) override { return as_vec(model_.chunk_output(chunk, mb)); }
  CVecU<float> backward(int chunk, int mb, CVecU<float> grad_output) override {
    return as_vec(model_.backward_chunk(chunk, mb, as_mat(grad_output)));
  }

 private:
  CMatU<S> as_mat(CVecU<float> v) const {
    if (!v.data()) return CMatU<S>();
    if constexpr (std::is_same_v<S, float>) {
      const std::size_t cols = std::size_t(model_.dims().d_model);
      return CMatU<S>(v.data(), v.extent(0) / cols, cols);
    } else {
      throw std::logic_error("mini5d: a bf16 model's activations do not cross pipeline stages yet");
    }
  }
  CVecU<float> as_vec(CMatU<S> m) const {
    // bf16 at p = 1: the schedule never sends a chunk's output or input gradient.
    if constexpr (std::is_same_v<S, float>)
      return m.data() ? CVecU<float>(m.data(), m.extent(0) * m.extent(1)) : CVecU<float>();
    else
      return CVecU<float>();
  }
  model::Gpt<S>& model_;
};

}  // namespace mini5d::train
