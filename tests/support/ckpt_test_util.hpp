// SPDX-License-Identifier: BSD-3-Clause
// Shared by the checkpoint tests and the ckpt_tool helper: a small set of tensors
// (1-D, 2-D, 3-D, sizes that do not divide evenly), exact values as a pure function of
// (seed, dataset, index), ZeRO-style flat-range shards of them, and a byte flipper that
// finds a dataset's data in the file with H5Dget_offset.
#pragma once
#include <hdf5.h>
#include <mpi.h>

#include <cstdint>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "mini5d/checkpoint/checkpoint.hpp"
#include "mini5d/checkpoint/runs.hpp"
#include "mini5d/core/counter_rng.hpp"
#include "mini5d/core/shard.hpp"

namespace ckpt_test {

struct Tensor {
  std::string name;
  std::vector<std::int64_t> shape;
  std::int64_t size() const {
    std::int64_t n = 1;
    for (auto e : shape) n *= e;
    return n;
  }
};

inline std::vector<Tensor> tensors() {
  return {{"wte", {37, 24}},
          {"wpe", {19, 24}},
          {"blocks.0.ln1.bias", {24}},
          {"blocks.0.attn.qkv.weight", {24, 72}},
          {"blocks.0.moe.experts.weight", {3, 24, 10}},
          {"blocks.10.mlp.fc.bias", {41}},
          {"lm_head.weight", {37, 24}}};
}

inline const std::vector<std::string>& roots() {
  static const std::vector<std::string> r{"model", "optimizer/exp_avg", "optimizer/exp_avg_sq"};
  return r;
}

// Exact in float32 (a multiple of 1/256 below 128 in magnitude); tests/cli/ckpt_h5py.py
// computes the same numbers.
inline float value(std::uint64_t seed, const std::string& dataset, std::int64_t i) {
  const std::uint64_t stream = mini5d::rng::name_hash(dataset.c_str()) % 65536;
  const std::uint64_t k = (static_cast<std::uint64_t>(i) * 7919 + seed * 104729 + stream * 31) % 65536;
  return (static_cast<float>(k) - 32768.0f) / 256.0f;
}

// One rank's ZeRO-style part of a root: the tensors laid end to end in one flat buffer,
// split evenly over `ranks`; `data` holds the rank's part, shards point into it.
struct FlatPart {
  std::vector<float> data;
  std::vector<mini5d::checkpoint::TensorShard> shards;
  std::vector<mini5d::checkpoint::TensorShardOut> outs;  // the same blocks, for reading
};

inline void add_flat_part(FlatPart& part, const std::string& root, std::uint64_t seed, int ranks, int rank) {
  const auto ts = tensors();
  std::int64_t total = 0;
  for (const auto& t : ts) total += t.size();
  const mini5d::Span mine = mini5d::even_part(total, ranks, rank);
  const std::size_t base = part.data.size();
  part.data.resize(base + static_cast<std::size_t>(mine.size()));
  std::int64_t offset = 0;
  std::vector<std::pair<std::string, mini5d::ShardDescriptor>> descs;
  for (const auto& t : ts) {
    const std::int64_t b = std::max(mine.begin, offset), e = std::min(mine.end, offset + t.size());
    if (b < e) {
      const std::string path = mini5d::checkpoint::dataset_path(root, t.name);
      for (std::int64_t g = b; g < e; ++g)
        part.data[base + static_cast<std::size_t>(g - mine.begin)] = value(seed, path, g - offset);
      descs.emplace_back(path, mini5d::flat_range_shard(t.shape, b - offset, e - offset,
                                                        static_cast<std::int64_t>(base) + b - mine.begin));
    }
    offset += t.size();
  }
  for (const auto& [path, d] : descs) {
    part.shards.push_back({path, d, nullptr});  // pointers set once `data` stops growing
    part.outs.push_back({path, d, nullptr});
  }
}

inline FlatPart zero_part(std::uint64_t seed, int ranks, int rank) {
  FlatPart p;
  for (const auto& r : roots()) add_flat_part(p, r, seed, ranks, rank);
  for (auto& s : p.shards) s.data = p.data.data();
  return p;
}

// Points every read request of `part` into `out` (resized to match part.data).
inline void read_into(FlatPart& part, std::vector<float>& out) {
  out.assign(part.data.size(), -999.0f);
  for (auto& o : part.outs) o.data = out.data();
}

inline mini5d::checkpoint::CheckpointMeta meta_for(long step, std::uint64_t seed, int ranks) {
  mini5d::checkpoint::CheckpointMeta m;
  m.step = step;
  m.tokens_seen = step * 1000;
  m.deck_yaml = "model:\n  vocab: 37\n  d_model: 24\ntrain:\n  seed: " + std::to_string(seed) + "\n";
  m.layout = "{\"d\":" + std::to_string(ranks) + ",\"t\":1,\"p\":1,\"c\":1,\"e\":1,\"zero\":1}";
  m.train_seed = seed;
  m.data_seed = seed + 1;
  m.data_cursor = step;
  m.extra = {{"writer", "ckpt_test"}, {"note", "exact values"}};
  return m;
}

// Flips one byte of element `element` of `dataset` in `file` (one process, no MPI-IO).
inline void flip_byte(const std::string& file, const std::string& dataset, std::int64_t element) {
  haddr_t offset = HADDR_UNDEF;
  {
    const hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) throw std::runtime_error("flip_byte: cannot open " + file);
    const hid_t d = H5Dopen2(f, dataset.c_str(), H5P_DEFAULT);
    if (d >= 0) {
      offset = H5Dget_offset(d);
      H5Dclose(d);
    }
    H5Fclose(f);
  }
  if (offset == HADDR_UNDEF) throw std::runtime_error("flip_byte: no contiguous data for " + dataset);
  std::fstream io(file, std::ios::in | std::ios::out | std::ios::binary);
  const auto pos = static_cast<std::streamoff>(offset + 4 * static_cast<haddr_t>(element) + 1);
  io.seekg(pos);
  char c = 0;
  io.read(&c, 1);
  c = static_cast<char>(c ^ 0x10);
  io.seekp(pos);
  io.write(&c, 1);
  if (!io) throw std::runtime_error("flip_byte: cannot rewrite " + file);
}

// Writes a NaN at `element` of `dataset` and updates the dataset's checksum to match,
// as a diverged save would have produced: the checksum alone cannot tell.
inline void poison_element(const std::string& file, const std::string& dataset, std::int64_t element) {
  const hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  if (f < 0) throw std::runtime_error("poison: cannot open " + file);
  const hid_t d = H5Dopen2(f, dataset.c_str(), H5P_DEFAULT);
  if (d < 0) throw std::runtime_error("poison: no dataset " + dataset);
  const hid_t space = H5Dget_space(d);
  const hsize_t at = static_cast<hsize_t>(element);
  const hsize_t one[1] = {1};
  // The element's position in a flattened view of the dataset.
  const int rank = H5Sget_simple_extent_ndims(space);
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank)), coord(static_cast<std::size_t>(rank));
  H5Sget_simple_extent_dims(space, dims.data(), nullptr);
  std::int64_t rem = element;
  for (int k = rank; k-- > 0;) {
    coord[static_cast<std::size_t>(k)] = static_cast<hsize_t>(rem % static_cast<std::int64_t>(dims[static_cast<std::size_t>(k)]));
    rem /= static_cast<std::int64_t>(dims[static_cast<std::size_t>(k)]);
  }
  H5Sselect_elements(space, H5S_SELECT_SET, 1, coord.data());
  const hid_t mem = H5Screate_simple(1, one, nullptr);
  float old = 0;
  H5Dread(d, H5T_NATIVE_FLOAT, mem, space, H5P_DEFAULT, &old);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  H5Dwrite(d, H5T_NATIVE_FLOAT, mem, space, H5P_DEFAULT, &nan);
  const hid_t attr = H5Aopen(d, "checksum", H5P_DEFAULT);
  std::uint64_t sum = 0;
  H5Aread(attr, H5T_NATIVE_UINT64, &sum);
  const std::uint64_t h = mini5d::rng::mix64(static_cast<std::uint64_t>(at));
  sum = sum - mini5d::checkpoint::element_hash(h, old) + mini5d::checkpoint::element_hash(h, nan);
  H5Awrite(attr, H5T_NATIVE_UINT64, &sum);
  H5Aclose(attr);
  H5Sclose(mem);
  H5Sclose(space);
  H5Dclose(d);
  H5Fclose(f);
}

}  // namespace ckpt_test
