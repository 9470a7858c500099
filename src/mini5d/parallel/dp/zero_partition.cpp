// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/parallel/dp/zero_partition.hpp"

#include <algorithm>
#include <climits>
#include <stdexcept>

namespace mini5d::dp {

ZeroPartition::ZeroPartition(const model::ParamLayout& layout, int group_size, int group_rank, int expert_size,
                             int expert_rank)
    : layout_(layout),
      G_(group_size),
      r_(group_rank),
      Ge_(expert_size > 0 ? expert_size : group_size),
      re_(expert_size > 0 ? expert_rank : group_rank) {
  const auto& us = layout.units();
  unit_chunks_.resize(us.size());
  for (int u = 0; u < int(us.size()); ++u) {
    const auto& unit = us[std::size_t(u)];
    // MPI counts are ints: a unit of more than 2^31-1 elements per rank would need
    // splitting into several calls (not needed at mini-app scale; say so if it happens).
    if (unit.size / std::min(G_, Ge_) + 1 > INT_MAX)
      throw std::runtime_error("mini5d: unit " + unit.name + " is too large for one MPI call per rank");
    std::int64_t unit_part = 0;
    for (const Chunk& c : {Chunk{u, {0, unit.expert_begin}, false}, Chunk{u, {unit.expert_begin, unit.size}, true}}) {
      if (c.expert && c.span.size() == 0) continue;
      const int G = c.expert ? Ge_ : G_, me = c.expert ? re_ : r_;
      std::vector<Span> parts;
      std::vector<int> counts, displs;
      for (int r = 0; r < G; ++r) {
        const Span p = even_part(c.span.size(), G, r);
        parts.push_back({c.span.begin + p.begin, c.span.begin + p.end});
        counts.push_back(int(p.size()));
        displs.push_back(int(p.begin));
      }
      unit_chunks_[std::size_t(u)].push_back(int(chunks_.size()));
      chunks_.push_back(c);
      shard_offset_.push_back(shard_size_);
      shard_size_ += parts[std::size_t(me)].size();
      unit_part += parts[std::size_t(me)].size();
      parts_.push_back(parts);
      counts_.push_back(counts);
      displs_.push_back(displs);
    }
    max_part_ = std::max(max_part_, unit_part);
    max_unit_ = std::max(max_unit_, unit.size);
  }
}

Span ZeroPartition::part(int chunk, int r) const { return parts_[chunk][r]; }
Span ZeroPartition::my_part(int chunk) const { return parts_[chunk][chunks_[chunk].expert ? re_ : r_]; }

std::int64_t ZeroPartition::unit_part_size(int unit) const {
  std::int64_t n = 0;
  for (int c : unit_chunks_[unit]) n += my_part(c).size();
  return n;
}

std::vector<optim::Segment> ZeroPartition::segments(int stage) const {
  std::vector<optim::Segment> out;
  const auto& us = layout_.units();
  for (int c = 0; c < int(chunks_.size()); ++c) {
    const Span p = my_part(c);
    const std::int64_t base = us[chunks_[c].unit].offset, begin = base + p.begin, end = base + p.end;
    for (const auto& t : layout_.tensors()) {
      const std::int64_t lo = std::max(begin, t.offset), hi = std::min(end, t.offset + t.size());
      if (lo >= hi) continue;
      const std::int64_t local = shard_offset_[c] + (lo - begin);
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
    // A tied head's copy of wte is the first stage's wte again: written once, by it.
    if (writing && t.tied_copy) continue;
    TensorShard ts{t.name, {t.global_shape, {}}};
    for (int c = 0; c < int(chunks_.size()); ++c) {
      const Span p = my_part(c);
      const std::int64_t base = us[chunks_[c].unit].offset, begin = base + p.begin, end = base + p.end;
      const std::int64_t lo = std::max(begin, t.offset), hi = std::min(end, t.offset + t.size());
      if (lo >= hi) continue;
      model::append_part_blocks(t, lo - t.offset, hi - t.offset, flat ? lo : shard_offset_[c] + (lo - begin),
                                ts.desc.blocks);
    }
    // Replicated key/value rows (grouped-query attention, t > kv_heads) are written by
    // the first rank that holds them.
    if (writing && t.replica > 0) {
      std::vector<ShardBlock> kept;
      for (auto& b : ts.desc.blocks)
        if (b.offset[0] < t.shared_from) kept.push_back(std::move(b));
      ts.desc.blocks = std::move(kept);
    }
    // Checkpoints (and the checksum, which reads their shards) hold no padding rows.
    ts.desc = model::stored_part(t, std::move(ts.desc));
    if (!ts.desc.blocks.empty()) out.push_back(std::move(ts));
  }
  return out;
}

template <class Run>
std::vector<Span> ZeroPartition::spans_of(bool flat, Run run) const {
  // run(t): the elements [from, to) of tensor t wanted (from >= to: none).
  std::vector<Span> out;
  auto add = [&](std::int64_t lo, std::int64_t hi, std::int64_t at) {
    if (lo < hi) out.push_back({at, at + (hi - lo)});
  };
  if (flat) {  // the whole buffer
    for (const auto& t : layout_.tensors()) {
      const auto [from, to] = run(t);
      add(t.offset + from, t.offset + to, t.offset + from);
    }
    return out;
  }
  const auto& us = layout_.units();
  for (int c = 0; c < int(chunks_.size()); ++c) {
    const Span p = my_part(c);
    const std::int64_t base = us[chunks_[c].unit].offset, begin = base + p.begin, end = base + p.end;
    for (const auto& t : layout_.tensors()) {
      const auto [from, to] = run(t);
      const std::int64_t lo = std::max(begin, t.offset + from), hi = std::min(end, t.offset + to);
      add(lo, hi, shard_offset_[c] + (lo - begin));
    }
  }
  return out;
}

namespace {
// All of a tensor that `keep` picks, none of the others.
template <class Keep>
auto whole_if(Keep keep) {
  return [keep](const model::TensorSpec& t) {
    return keep(t) ? std::pair<std::int64_t, std::int64_t>{0, t.size()} : std::pair<std::int64_t, std::int64_t>{0, 0};
  };
}
}  // namespace

std::vector<Span> ZeroPartition::replicated_spans(bool flat) const {
  if (layout_.tp_size() == 1) return {};
  return spans_of(flat, whole_if([](const model::TensorSpec& t) { return t.replicated && !t.expert; }));
}

std::vector<Span> ZeroPartition::kv_shared_spans(bool flat) const {
  return spans_of(flat, [](const model::TensorSpec& t) {
    return t.replicas > 1 ? std::pair<std::int64_t, std::int64_t>{t.shared_begin, t.shared_end}
                          : std::pair<std::int64_t, std::int64_t>{0, 0};
  });
}

std::vector<Span> ZeroPartition::expert_spans(bool flat) const {
  return spans_of(flat, whole_if([](const model::TensorSpec& t) { return t.expert; }));
}

std::vector<Span> ZeroPartition::tied_copy_spans(bool flat) const {
  return spans_of(flat, whole_if([](const model::TensorSpec& t) { return t.tied_copy; }));
}

}  // namespace mini5d::dp
