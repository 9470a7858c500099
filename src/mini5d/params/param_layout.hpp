// SPDX-License-Identifier: BSD-3-Clause
// The parameters of the GPT decoder as named tensors inside one flat buffer.
// A flat buffer is what the optimizer, ZeRO sharding and checkpoints work on; the
// model only takes views into it. Each tensor records its logical (unsharded) shape,
// the shape of the part this tensor-parallel rank holds, where that part lies in the
// logical tensor, its offset in the buffer, how it is initialised and whether weight
// decay applies.
//
// Tensor parallelism (the Megatron cuts, docs/architecture.md): column-parallel weights (fused
// QKV by heads, MLP fc, the vocab-parallel embedding and LM head) keep rows r*n/t ..
// of the logical tensor; row-parallel weights (attention and MLP projections) keep
// columns; LayerNorms, row-parallel biases and the position embedding are replicated.
// The fused QKV keeps three row blocks (its heads' q, k and v rows; the k and v blocks
// are kv_heads heads each with grouped-query attention), SwiGLU's fused gate
// and up two (its gate rows, then its up rows): a local tensor is a list of rectangular
// pieces of the logical one, stored one after the other. Which tensors exist follows
// model.norm, model.mlp and model.bias (no bias tensors when bias=false or for RMSNorm)
// and model.positions (no wpe with rope). With model.tie_embeddings the head has no
// lm_head.weight: it multiplies by wte, the embeddings' own tensor when one rank holds
// both units, or a copy of it (TensorSpec::tied_copy) on a last pipeline stage that
// holds the head without the embeddings. wte and the LM head share one row split.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "mini5d/core/deck.hpp"
#include "mini5d/core/shard.hpp"

namespace mini5d::model {

enum class Init { Normal, Zeros, Ones };

// A rectangular block of a logical tensor (offset and extent per dimension).
struct Piece {
  std::vector<std::int64_t> offset, extent;
  std::int64_t size() const {
    std::int64_t n = 1;
    for (auto e : extent) n *= e;
    return n;
  }
};

struct TensorSpec {
  std::string name;                        // e.g. "blocks.3.attn.qkv.weight"
  std::vector<std::int64_t> global_shape;  // logical, unsharded shape
  std::vector<std::int64_t> shape;         // this rank's part (what the kernels see)
  std::vector<Piece> pieces;               // where the part lies in the logical tensor
  bool replicated = true;                  // every tensor-parallel rank holds all of it
  std::int64_t offset = 0;                 // in elements, into the flat buffer
  Init init = Init::Zeros;
  double stddev = 0;                       // for Init::Normal
  bool decay = false;                      // AdamW weight decay applies (matrices, embeddings)
  bool in_matmul = false;                  // takes part in a matrix product (FLOP count)
  bool expert = false;                     // an [E, ...] expert tensor: split over the e x t
                                           // group, its gradients reduced over d x c only
  // Rows of the leading dimension that are the model's; -1: all. The token embedding
  // and LM head hold the padded vocabulary (rules/vocab_padding.hpp): rows from
  // stored_rows on are padding, zero, outside checkpoints and the parameter checksum.
  std::int64_t stored_rows = -1;
  // Grouped-query attention with t > kv_heads: the fused QKV's K/V rows (global rows
  // from shared_from on; this part's elements [shared_begin, shared_end)) are one key/value
  // head's, held whole by `replicas` tensor ranks; their gradients are summed over them
  // and replica 0 writes them (checkpoints, checksum).
  int replicas = 1, replica = 0;
  std::int64_t shared_from = 0, shared_begin = 0, shared_end = 0;
  // model.tie_embeddings with the head on another pipeline stage than the embeddings:
  // that stage's copy of wte. It is named wte so that it draws wte's initial values and
  // loads wte's dataset; it is left out of checkpoints, the parameter checksum and the
  // gradient norm (the first stage's wte counts), and its gradient is summed with
  // wte's over the pipeline ends every step (parallel/pp/tied_embedding.hpp).
  bool tied_copy = false;
  std::int64_t size() const {
    std::int64_t n = 1;
    for (auto e : shape) n *= e;
    return n;
  }
  std::int64_t global_size() const {
    std::int64_t n = 1;
    for (auto e : global_shape) n *= e;
    return n;
  }
};

// The blocks of the logical tensor that hold the part's elements [begin, end) (indices
// into the part, row-major piece after piece), placed from local_offset on.
void append_part_blocks(const TensorSpec& t, std::int64_t begin, std::int64_t end, std::int64_t local_offset,
                        std::vector<ShardBlock>& out);

// The part of `d` (blocks of t) that checkpoints hold: without t's padding rows, over
// the unpadded global shape. Padding rows come last in a row-major block, so cutting a
// block's leading extent keeps its local offset.
ShardDescriptor stored_part(const TensorSpec& t, ShardDescriptor d);

// A unit is what ZeRO gathers, reduces and shards as one piece, in flat-buffer order:
// unit 0 the embeddings (wte, wpe), units 1..layers the blocks, the last the head
// (final LayerNorm and LM head). Each is a contiguous run of the flat buffer.
struct Unit {
  std::string name;  // "embeddings", "blocks.3", "head"
  std::int64_t offset = 0, size = 0;
  int global = 0;    // index in the whole model: 0 embeddings, 1 + l block l, layers + 1 head
  // Unit-local offset where the unit's expert tensors begin (they come last); == size
  // when it has none. ZeRO shards [0, expert_begin) over the dense-gradient group and
  // [expert_begin, size) over the expert-gradient group.
  std::int64_t expert_begin = 0;
  std::int64_t dense_size() const { return expert_begin; }
  std::int64_t expert_size() const { return size - expert_begin; }
};

// Whether block `layer` has a mixture-of-experts MLP (model.experts > 0, every
// moe_every-th block: blocks moe_every-1, 2*moe_every-1, ...).
bool is_moe_block(const ModelConfig& m, int layer);

class ParamLayout {
 public:
  // The part of the model tensor-parallel rank tp_rank of tp_size holds. `owned`: the
  // global units (Unit::global, ascending) a pipeline rank holds; empty for all. The
  // flat buffer, tensors() and units() then cover only those units, in model order.
  // Expert tensors ([E, ...]) are split by experts over the expert-parallel group
  // (e x t) instead: rank ep_rank of ep_size holds experts ep_rank*E/ep_size .. .
  explicit ParamLayout(const ModelConfig& m, int tp_size = 1, int tp_rank = 0, std::vector<int> owned = {},
                       int ep_size = 1, int ep_rank = 0);
  const std::vector<TensorSpec>& tensors() const { return tensors_; }
  const TensorSpec& at(const std::string& name) const;
  const TensorSpec* find(const std::string& name) const;  // nullptr if none
  std::int64_t total() const { return total_; }  // elements of this rank's flat buffer
  // Parameters of the whole (logical) model that take part in matrix products (the N of
  // 6*N*tokens), whatever units this rank owns.
  std::int64_t matmul_params() const { return matmul_params_; }
  // Elements of the whole logical model.
  std::int64_t global_total() const { return global_total_; }
  // This rank's index of global unit g in units(), or -1 if it does not hold it.
  int local_unit(int global) const;
  const std::vector<Unit>& units() const { return units_; }
  int tp_size() const { return tp_size_; }
  int tp_rank() const { return tp_rank_; }
  int ep_size() const { return ep_size_; }
  int ep_rank() const { return ep_rank_; }
  // Elements of this rank's expert tensors.
  std::int64_t expert_total() const;
  // model.tie_embeddings: the LM head multiplies by wte (or this rank's copy of it).
  bool tied() const { return tied_; }

 private:
  enum class Split { none, rows, cols, qkv_rows, pair_rows, experts };
  void add(const std::string& name, std::vector<std::int64_t> shape, Split split, Init init, double stddev,
           bool decay, bool in_matmul);
  void close_unit(const std::string& name);
  std::vector<TensorSpec> tensors_;
  std::vector<Unit> units_;
  std::int64_t total_ = 0, matmul_params_ = 0, global_total_ = 0;
  int tp_size_ = 1, tp_rank_ = 0, ep_size_ = 1, ep_rank_ = 0;
  bool tied_ = false;
  std::vector<int> local_of_;  // [global unit] -> index in units_, or -1
  std::int64_t expert_begin_ = -1;  // flat offset of the open unit's first expert tensor
  std::vector<std::int64_t> qkv_blocks_;  // rows of the fused QKV's q, k and v blocks
  std::int64_t kv_heads_ = 1, head_dim_ = 1;
};

}  // namespace mini5d::model
