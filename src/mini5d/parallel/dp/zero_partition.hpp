// SPDX-License-Identifier: BSD-3-Clause
// How ZeRO splits the flat parameter buffer over the G ranks of the dense-gradient
// group: every unit (embeddings, each block, head) is split into G nearly equal
// contiguous parts (even_part, no padding), and rank r's shard is its part of every
// unit, concatenated in unit order. Splitting per unit, not the whole buffer, is what
// lets a unit be reduced, scattered or gathered on its own as soon as it is ready.
// From this one partition come the collective counts, the shard-local offsets, the
// optimizer segments for each ZeRO stage, and the shard descriptors checkpoints use.
#pragma once
#include <cstdint>
#include <vector>

#include "mini5d/core/shard.hpp"
#include "mini5d/model/param_layout.hpp"
#include "mini5d/optim/adamw.hpp"

namespace mini5d::dp {

class ZeroPartition {
 public:
  ZeroPartition(const model::ParamLayout& layout, int group_size, int group_rank);

  int group_size() const { return G_; }
  int group_rank() const { return r_; }
  int units() const { return int(parts_.size()); }
  // Rank r's part of unit u, in unit-local element indices.
  Span part(int unit, int r) const;
  Span my_part(int unit) const { return part(unit, r_); }
  // Where unit u's part starts in this rank's shard buffer.
  std::int64_t shard_offset(int unit) const { return shard_offset_[unit]; }
  std::int64_t shard_size() const { return shard_size_; }
  std::int64_t max_unit_size() const { return max_unit_; }
  std::int64_t max_part_size() const { return max_part_; }
  // Counts and displacements of unit u's parts over the group (for the collectives).
  const std::vector<int>& counts(int unit) const { return counts_[unit]; }
  const std::vector<int>& displs(int unit) const { return displs_[unit]; }

  // The AdamW segments of this rank's shard for ZeRO `stage`: where each piece of a
  // tensor sits in the parameter, gradient and moment buffers (flat when that buffer
  // is whole at this stage, shard-local when it is sharded).
  std::vector<optim::Segment> segments(int stage) const;
  // For every tensor, the part this rank's shard holds, as a shard descriptor over
  // the tensor's logical shape (tensors with nothing on this rank are left out). Local
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

 private:
  const model::ParamLayout& layout_;
  int G_, r_;
  std::vector<std::vector<Span>> parts_;  // [unit][rank]
  std::vector<std::vector<int>> counts_, displs_;
  std::vector<std::int64_t> shard_offset_;
  std::int64_t shard_size_ = 0, max_unit_ = 0, max_part_ = 0;
};

}  // namespace mini5d::dp
