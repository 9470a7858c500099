// SPDX-License-Identifier: BSD-3-Clause
// Shard descriptors: which part of a logical (unsharded) tensor a rank holds and where
// those elements sit in the rank's local buffer. ZeRO, the parallel axes and the
// checkpoint code all speak this one vocabulary, so a new axis only fills descriptors
// and the checkpoint code does not change (docs/parallelism.md, docs/checkpoints.md).
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace mini5d {

// A half-open run [begin, end) of elements.
struct Span {
  std::int64_t begin = 0, end = 0;
  std::int64_t size() const { return end - begin; }
};

// Part `index` of `n` elements split into `parts` nearly equal contiguous parts: the
// first n % parts parts hold one element more. No padding, so the parts sum to n.
inline Span even_part(std::int64_t n, int parts, int index) {
  const std::int64_t q = n / parts, r = n % parts;
  const std::int64_t begin = index * q + (index < r ? index : r);
  return {begin, begin + q + (index < r ? 1 : 0)};
}

// A rectangular block of a logical tensor: its offset and extent per dimension, and
// where its elements start (row-major, contiguous) in the local buffer.
struct ShardBlock {
  std::vector<std::int64_t> offset, extent;
  std::int64_t local_offset = 0;
  std::int64_t size() const {
    std::int64_t n = 1;
    for (auto e : extent) n *= e;
    return n;
  }
};

// The part of one logical tensor a rank holds: the tensor's global shape and the
// blocks (disjoint, in row-major order of the local buffer).
struct ShardDescriptor {
  std::vector<std::int64_t> global_shape;
  std::vector<ShardBlock> blocks;
  std::int64_t local_elements() const {
    std::int64_t n = 0;
    for (const auto& b : blocks) n += b.size();
    return n;
  }
};

// The blocks that cover the flat (row-major) elements [begin, end) of a tensor of
// `shape`, placed from `local_offset` on. A flat run of a 2-D tensor is at most three
// blocks: the tail of a first row, whole rows, the head of a last row; in N-D the same
// peeling recurses over the leading dimension.
inline void append_flat_range_blocks(const std::vector<std::int64_t>& shape, std::int64_t begin,
                                     std::int64_t end, std::int64_t local_offset,
                                     std::vector<ShardBlock>& out) {
  if (begin >= end) return;
  if (shape.empty()) {  // a scalar
    out.push_back({{}, {}, local_offset});
    return;
  }
  std::int64_t row = 1;  // elements per index of the leading dimension
  for (std::size_t i = 1; i < shape.size(); ++i) row *= shape[i];
  const std::vector<std::int64_t> inner(shape.begin() + 1, shape.end());
  auto prefixed = [&](std::int64_t lead, std::int64_t lead_extent, const ShardBlock& b) {
    ShardBlock o;
    o.offset.push_back(lead);
    o.extent.push_back(lead_extent);
    o.offset.insert(o.offset.end(), b.offset.begin(), b.offset.end());
    o.extent.insert(o.extent.end(), b.extent.begin(), b.extent.end());
    o.local_offset = b.local_offset;
    return o;
  };
  std::int64_t pos = begin, local = local_offset;
  // Head: a partial leading index.
  if (pos % row != 0) {
    const std::int64_t lead = pos / row, stop = std::min(end, (lead + 1) * row);
    std::vector<ShardBlock> sub;
    append_flat_range_blocks(inner, pos - lead * row, stop - lead * row, local, sub);
    for (const auto& b : sub) out.push_back(prefixed(lead, 1, b));
    local += stop - pos;
    pos = stop;
  }
  // Body: whole leading indices.
  const std::int64_t whole = (end - pos) / row;
  if (whole > 0) {
    ShardBlock b;
    b.offset.assign(shape.size(), 0);
    b.offset[0] = pos / row;
    b.extent = shape;
    b.extent[0] = whole;
    b.local_offset = local;
    out.push_back(b);
    local += whole * row;
    pos += whole * row;
  }
  // Tail: a partial last leading index.
  if (pos < end) {
    const std::int64_t lead = pos / row;
    std::vector<ShardBlock> sub;
    append_flat_range_blocks(inner, 0, end - lead * row, local, sub);
    for (const auto& b : sub) out.push_back(prefixed(lead, 1, b));
  }
}

inline ShardDescriptor flat_range_shard(const std::vector<std::int64_t>& shape, std::int64_t begin,
                                        std::int64_t end, std::int64_t local_offset) {
  std::int64_t n = 1;
  for (auto e : shape) n *= e;
  if (begin < 0 || end > n || begin > end)
    throw std::out_of_range("mini5d: flat range [" + std::to_string(begin) + ", " +
                            std::to_string(end) + ") outside a tensor of " + std::to_string(n) +
                            " elements");
  ShardDescriptor d;
  d.global_shape = shape;
  append_flat_range_blocks(shape, begin, end, local_offset, d.blocks);
  return d;
}

}  // namespace mini5d
