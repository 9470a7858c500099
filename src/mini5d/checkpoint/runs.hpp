// SPDX-License-Identifier: BSD-3-Clause
// A shard as contiguous runs, and the layout-independent checksum.
//
// HDF5 enumerates the elements of a union of hyperslabs in the dataset's row-major
// order, whatever order the blocks were added in, so the local buffer has to present
// them in that order too. `shard_runs` lists the shard's contiguous runs (global flat
// start, local start, length) sorted by global position: when their local starts are
// consecutive (a ZeRO flat range, any single block) HDF5 reads or writes the caller's
// buffer directly; otherwise the runs say how to pack a staging buffer.
//
// The checksum is sum_i mix64(mix64(i) ^ bits(x_i)) mod 2^64 over the global flat index
// i: a sum, so any partition of the elements over ranks gives the same total, and
// keyed by position, so a flipped byte or two swapped elements change it.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "mini5d/core/counter_rng.hpp"
#include "mini5d/core/shard.hpp"

namespace mini5d::checkpoint {

struct Run {
  std::int64_t global = 0, local = 0, length = 0;
};

inline std::int64_t element_count(const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (auto e : shape) n *= e;
  return n;
}

// Why a descriptor cannot be used (empty when it can): blocks must match the tensor's
// rank and lie inside it. Caught before any I/O, so a bad caller never corrupts a file.
inline std::string descriptor_problem(const ShardDescriptor& d) {
  const auto& shape = d.global_shape;
  for (const auto& b : d.blocks) {
    if (b.offset.size() != shape.size() || b.extent.size() != shape.size())
      return "a block has " + std::to_string(b.offset.size()) + " dimensions, the tensor " +
             std::to_string(shape.size());
    if (b.local_offset < 0) return "a block has a negative local offset";
    for (std::size_t k = 0; k < shape.size(); ++k)
      if (b.offset[k] < 0 || b.extent[k] < 0 || b.offset[k] + b.extent[k] > shape[k])
        return "a block reaches outside the tensor in dimension " + std::to_string(k);
  }
  return {};
}

// Sorted by global start; runs contiguous both globally and locally are merged.
inline std::vector<Run> shard_runs(const ShardDescriptor& d) {
  const auto& shape = d.global_shape;
  const std::size_t rank = shape.size();
  std::vector<Run> runs;
  for (const auto& b : d.blocks) {
    if (b.size() == 0) continue;
    if (rank == 0) {
      runs.push_back({0, b.local_offset, 1});
      continue;
    }
    // One run per position of the leading dimensions, in the block's row-major order.
    const std::int64_t len = b.extent[rank - 1];
    std::int64_t rows = 1;
    for (std::size_t k = 0; k + 1 < rank; ++k) rows *= b.extent[k];
    std::vector<std::int64_t> idx(rank - 1);
    for (std::int64_t r = 0; r < rows; ++r) {
      std::int64_t rem = r;
      for (std::size_t k = rank - 1; k-- > 0;) {
        idx[k] = rem % b.extent[k];
        rem /= b.extent[k];
      }
      std::int64_t g = 0;
      for (std::size_t k = 0; k + 1 < rank; ++k) g = g * shape[k] + b.offset[k] + idx[k];
      g = g * shape[rank - 1] + b.offset[rank - 1];
      runs.push_back({g, b.local_offset + r * len, len});
    }
  }
  std::sort(runs.begin(), runs.end(), [](const Run& a, const Run& b) { return a.global < b.global; });
  std::vector<Run> merged;
  for (const auto& r : runs) {
    if (!merged.empty()) {
      auto& m = merged.back();
      if (m.global + m.length == r.global && m.local + m.length == r.local) {
        m.length += r.length;
        continue;
      }
    }
    merged.push_back(r);
  }
  return merged;
}

// True when the runs sit back to back in the local buffer in global order, so the
// buffer from runs[0].local on is already in HDF5's order.
inline bool runs_are_packed(const std::vector<Run>& runs) {
  for (std::size_t i = 1; i < runs.size(); ++i)
    if (runs[i].local != runs[i - 1].local + runs[i - 1].length) return false;
  return true;
}

// True when the runs are one range of the file (each starts where the one before it
// ends, in the dataset's row-major order); an empty shard is one too. Such a shard is
// written and read independently (see transfer_for), not through two-phase I/O.
inline bool runs_are_one_range(const std::vector<Run>& runs) {
  for (std::size_t i = 1; i < runs.size(); ++i)
    if (runs[i].global != runs[i - 1].global + runs[i - 1].length) return false;
  return true;
}

inline std::uint64_t element_hash(std::uint64_t index_hash, float x) {
  std::uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return rng::mix64(index_hash ^ bits);
}

// Partial checksum of elements stored at data[local ...] for global runs.
inline std::uint64_t partial_checksum(const std::vector<Run>& runs, const float* data) {
  std::uint64_t sum = 0;
  for (const auto& r : runs)
    for (std::int64_t k = 0; k < r.length; ++k)
      sum += element_hash(rng::mix64(static_cast<std::uint64_t>(r.global + k)), data[r.local + k]);
  return sum;
}

}  // namespace mini5d::checkpoint
