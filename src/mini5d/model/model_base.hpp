// SPDX-License-Identifier: BSD-3-Clause
// What the trainer, the reports and the checkpoints ask of a model, whatever its storage
// type (Gpt<float>, or Gpt<bf16> in mixed precision): its shape and layout, its chunks,
// the memory it allocated, and the mixture-of-experts counters. Nothing here depends on
// the element type; forward, backward and the buffers stay on Gpt<S>.
#pragma once
#include <cstdint>
#include <vector>

#include "mini5d/core/deck.hpp"
#include "mini5d/model/layer_context.hpp"
#include "mini5d/params/param_layout.hpp"

namespace mini5d::model {

struct ChunkSpec;

class ModelBase {
 public:
  virtual ~ModelBase() = default;
  virtual const ModelConfig& config() const = 0;
  virtual const ParamLayout& layout() const = 0;
  virtual const std::vector<ChunkSpec>& chunks() const = 0;
  // Bytes of activations kept for the backward, and of the backward's work buffers.
  virtual std::int64_t activation_bytes() const = 0;
  virtual std::int64_t workspace_bytes() const = 0;
  virtual const MoeStats& moe_stats() const = 0;
  virtual void reset_moe_stats() = 0;
};

}  // namespace mini5d::model
