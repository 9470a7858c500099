// SPDX-License-Identifier: BSD-3-Clause
// How ZeRO splits the flat parameter buffer over the G ranks of the dense-gradient
// group: every unit (embeddings, each block, head) is split into G nearly equal
// contiguous parts (even_part, no padding), and rank r's shard is its part of every
// unit, concatenated in unit order. Splitting per unit, not the whole buffer, is what
// lets a unit be reduced, scattered or gathered on its own as soon as it is ready.
// From this one partition come the collective counts, the shard-local offsets, the
// optimizer segments for each ZeRO stage, and the shard descriptors checkpoints use.
// Expert parallelism: a unit's expert tensors are split over the expert-gradient group
// (d x c) instead of the dense one (d x c x e), so a unit is one or two chunks, each
// split over its own group; the rank's shard is its part of every chunk, in order.
#pragma once
#include <cstdint>
#include <vector>

#include "mini5d/core/shard.hpp"
#include "mini5d/params/param_layout.hpp"
#include "mini5d/optim/segment.hpp"

namespace mini5d::dp {

class ZeroPartition {
 public:
  // A unit's dense tensors are split over the dense-gradient group (group_size ranks),
  // its expert tensors (the unit's tail, model::Unit::expert_begin) over the
  // expert-gradient group (expert_size ranks; by default the same group).
  ZeroPartition(const model::ParamLayout& layout, int group_size, int group_rank, int expert_size = 0,
                int expert_rank = 0);

  int group_size() const { return G_; }
  int group_rank() const { return r_; }
  int expert_group_size() const { return Ge_; }
  int units() const { return int(unit_chunks_.size()); }

  // A chunk is the dense or the expert run of one unit, split over its own group; the
  // collectives work chunk by chunk. Spans are unit-local element indices.
  struct Chunk {
    int unit = 0;
    Span span;
    bool expert = false;
  };
  const std::vector<Chunk>& chunks() const { return chunks_; }
  const std::vector<int>& unit_chunks(int unit) const { return unit_chunks_[unit]; }
  // Rank r's part of chunk c (r in the chunk's group), in unit-local indices.
  Span part(int chunk, int r) const;
  Span my_part(int chunk) const;
  // Where chunk c's part starts in this rank's shard buffer; a unit's parts are
  // consecutive there, from unit_shard_offset(u), unit_part_size(u) elements.
  std::int64_t shard_offset(int chunk) const { return shard_offset_[chunk]; }
  std::int64_t unit_shard_offset(int unit) const { return shard_offset_[unit_chunks_[unit].front()]; }
  std::int64_t unit_part_size(int unit) const;
  std::int64_t shard_size() const { return shard_size_; }
  std::int64_t max_unit_size() const { return max_unit_; }
  std::int64_t max_part_size() const { return max_part_; }  // of unit_part_size
  // Counts and displacements of chunk c's parts over its group, relative to the chunk's
  // first element (for the collectives on the chunk's slice).
  const std::vector<int>& counts(int chunk) const { return counts_[chunk]; }
  const std::vector<int>& displs(int chunk) const { return displs_[chunk]; }

  // The AdamW segments of this rank's shard for ZeRO `stage`: where each piece of a
  // tensor sits in the parameter, gradient and moment buffers (flat when that buffer
  // is whole at this stage, shard-local when it is sharded).
  std::vector<optim::Segment> segments(int stage) const;
  // For every tensor, the part this rank's shard holds, as a shard descriptor over
  // the tensor's logical shape without vocabulary padding (model::stored_part; tensors
  // with nothing on this rank are left out). Local
  // offsets point into the shard buffer, or with `flat` into the whole flat buffer
  // (where a stage keeps that buffer whole).
  struct TensorShard {
    std::string name;
    ShardDescriptor desc;
  };
  // With `writing`, a tensor replicated over the tensor-parallel group is left out on
  // all but its first rank, so a checkpoint covers every logical element exactly once.
  std::vector<TensorShard> tensor_shards(bool flat = false, bool writing = false) const;
  // Where every tensor replicated over the tensor-parallel group lies in the flat
  // buffer (`flat`: all of each), or this rank's part of it in the shard buffer; empty
  // without tensor parallelism. Their gradients are summed over the group when sequence parallelism
  // gives each rank part of the tokens, and counted once in the global norm.
  std::vector<Span> replicated_spans(bool flat) const;
  // Likewise for the key/value rows of the fused QKV that t/kv_heads tensor ranks share
  // (grouped-query attention with t > kv_heads): their gradients are summed over those
  // ranks (the key/value group) and counted once in the global norm. Empty otherwise.
  std::vector<Span> kv_shared_spans(bool flat) const;
  // As replicated_spans for the expert tensors (whatever t): their squares in the global norm are
  // summed over the expert-gradient group (when sharded) and the expert-parallel group.
  std::vector<Span> expert_spans(bool flat) const;
  // Likewise for a last pipeline stage's copy of the tied embedding
  // (model::TensorSpec::tied_copy): counted in the global norm by the first stage's wte.
  std::vector<Span> tied_copy_spans(bool flat) const;

 private:
  template <class Run>
  std::vector<Span> spans_of(bool flat, Run run) const;
  const model::ParamLayout& layout_;
  int G_, r_, Ge_, re_;
  std::vector<Chunk> chunks_;
  std::vector<std::vector<int>> unit_chunks_;
  std::vector<std::vector<Span>> parts_;  // [chunk][rank], unit-local
  std::vector<std::vector<int>> counts_, displs_;
  std::vector<std::int64_t> shard_offset_;
  std::int64_t shard_size_ = 0, max_unit_ = 0, max_part_ = 0;
};

}  // namespace mini5d::dp
