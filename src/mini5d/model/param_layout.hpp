// SPDX-License-Identifier: BSD-3-Clause
// The parameters of the GPT decoder as named tensors inside one flat buffer.
// A flat buffer is what the optimizer, ZeRO sharding and checkpoints work on; the
// model only takes views into it. Each tensor records its logical shape, its offset
// in the buffer, how it is initialised and whether weight decay applies.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "mini5d/core/deck.hpp"

namespace mini5d::model {

enum class Init { Normal, Zeros, Ones };

struct TensorSpec {
  std::string name;                 // e.g. "blocks.3.attn.qkv.weight"
  std::vector<std::int64_t> shape;  // logical, unsharded shape
  std::int64_t offset = 0;          // in elements, into the flat buffer
  Init init = Init::Zeros;
  double stddev = 0;                // for Init::Normal
  bool decay = false;               // AdamW weight decay applies (matrices, embeddings)
  bool in_matmul = false;           // takes part in a matrix product (FLOP count)
  std::int64_t size() const {
    std::int64_t n = 1;
    for (auto e : shape) n *= e;
    return n;
  }
};

// A unit is what ZeRO gathers, reduces and shards as one piece, in flat-buffer order:
// unit 0 the embeddings (wte, wpe), units 1..layers the blocks, the last the head
// (final LayerNorm and LM head). Each is a contiguous run of the flat buffer.
struct Unit {
  std::string name;  // "embeddings", "blocks.3", "head"
  std::int64_t offset = 0, size = 0;
};

class ParamLayout {
 public:
  explicit ParamLayout(const ModelConfig& m);
  const std::vector<TensorSpec>& tensors() const { return tensors_; }
  const TensorSpec& at(const std::string& name) const;
  std::int64_t total() const { return total_; }
  // Parameters that take part in matrix products (the N of 6*N*tokens).
  std::int64_t matmul_params() const;
  const std::vector<Unit>& units() const { return units_; }

 private:
  void add(const std::string& name, std::vector<std::int64_t> shape, Init init, double stddev,
           bool decay, bool in_matmul);
  void close_unit(const std::string& name);
  std::vector<TensorSpec> tensors_;
  std::vector<Unit> units_;
  std::int64_t total_ = 0;
};

}  // namespace mini5d::model
