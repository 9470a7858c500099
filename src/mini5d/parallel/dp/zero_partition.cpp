// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/parallel/dp/zero_partition.hpp"

#include <algorithm>
#include <climits>
#include <stdexcept>

namespace mini5d::dp {

ZeroPartition::ZeroPartition(const model::ParamLayout& layout, int group_size, int group_rank)
    : layout_(layout), G_(group_size), r_(group_rank) {
  for (const auto& u : layout.units()) {
    // MPI counts are ints: a unit of more than 2^31-1 elements per rank would need
    // splitting into several calls (not needed at mini-app scale; say so if it happens).
    if (u.size / G_ + 1 > INT_MAX)
      throw std::runtime_error("mini5d: unit " + u.name + " is too large for one MPI call per rank");
    std::vector<Span> parts;
    std::vector<int> counts, displs;
    for (int r = 0; r < G_; ++r) {
      parts.push_back(even_part(u.size, G_, r));
      counts.push_back(int(parts.back().size()));
      displs.push_back(int(parts.back().begin));
      max_part_ = std::max(max_part_, parts.back().size());
    }
    shard_offset_.push_back(shard_size_);
    shard_size_ += parts[r_].size();
    max_unit_ = std::max(max_unit_, u.size);
    parts_.push_back(parts);
    counts_.push_back(counts);
    displs_.push_back(displs);
  }
}

Span ZeroPartition::part(int unit, int r) const { return parts_[unit][r]; }

std::vector<optim::Segment> ZeroPartition::segments(int stage) const {
  std::vector<optim::Segment> out;
  const auto& us = layout_.units();
  for (int u = 0; u < int(us.size()); ++u) {
    const Span p = my_part(u);
    const std::int64_t begin = us[u].offset + p.begin, end = us[u].offset + p.end;
    for (const auto& t : layout_.tensors()) {
      const std::int64_t lo = std::max(begin, t.offset), hi = std::min(end, t.offset + t.size());
      if (lo >= hi) continue;
      const std::int64_t local = shard_offset_[u] + (lo - begin);
      // Stage 0 keeps everything whole; 1 shards the moments; 2 the gradients too;
      // 3 the parameters too.
      optim::Segment s{lo, lo, lo, hi - lo, t.decay};
      if (stage >= 1) s.state_offset = local;
      if (stage >= 2) s.grad_offset = local;
      if (stage >= 3) s.param_offset = local;
      out.push_back(s);
    }
  }
  return out;
}

std::vector<ZeroPartition::TensorShard> ZeroPartition::tensor_shards(bool flat, bool writing) const {
  std::vector<TensorShard> out;
  const auto& us = layout_.units();
  for (const auto& t : layout_.tensors()) {
    // A tensor every tensor-parallel rank holds whole is written by the first of them.
    if (writing && t.replicated && layout_.tp_rank() != 0) continue;
    TensorShard ts{t.name, {t.global_shape, {}}};
    for (int u = 0; u < int(us.size()); ++u) {
      const Span p = my_part(u);
      const std::int64_t begin = us[u].offset + p.begin, end = us[u].offset + p.end;
      const std::int64_t lo = std::max(begin, t.offset), hi = std::min(end, t.offset + t.size());
      if (lo >= hi) continue;
      model::append_part_blocks(t, lo - t.offset, hi - t.offset, flat ? lo : shard_offset_[u] + (lo - begin),
                                ts.desc.blocks);
    }
    if (!ts.desc.blocks.empty()) out.push_back(std::move(ts));
  }
  return out;
}

std::vector<Span> ZeroPartition::replicated_spans(bool flat) const {
  std::vector<Span> out;
  if (layout_.tp_size() == 1) return out;
  if (flat) {  // the whole buffer
    for (const auto& t : layout_.tensors())
      if (t.replicated) out.push_back({t.offset, t.offset + t.size()});
    return out;
  }
  const auto& us = layout_.units();
  for (int u = 0; u < int(us.size()); ++u) {
    const Span p = my_part(u);
    const std::int64_t begin = us[u].offset + p.begin, end = us[u].offset + p.end;
    for (const auto& t : layout_.tensors()) {
      if (!t.replicated) continue;
      const std::int64_t lo = std::max(begin, t.offset), hi = std::min(end, t.offset + t.size());
      if (lo >= hi) continue;
      const std::int64_t at = shard_offset_[u] + (lo - begin);
      out.push_back({at, at + (hi - lo)});
    }
  }
  return out;
}

}  // namespace mini5d::dp
