// SPDX-License-Identifier: BSD-3-Clause
// The finite-difference harness of the model-level gradient tests, on one rank or many:
// a model small enough to difference every parameter, the fixed token batch they all
// train, the parameter perturbation that keeps no gradient trivially zero, and the
// comparison of a rank's part of a gradient with the single-rank gradient (each rank
// holds blocks of the logical tensors; their logical indices say where the single-rank
// value is). The differencing itself is grad_check.hpp's central_difference.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "grad_check.hpp"
#include "mini5d/model/gpt.hpp"

namespace mini5d::test {

// d_model 8 with 2 heads: a few thousand parameters, each differenced in well under a
// second; vocab, seq, ffn and depth are what the tests vary.
inline ModelConfig fd_model(int vocab, int seq, int ffn, int layers) {
  ModelConfig m;
  m.vocab = vocab;
  m.d_model = 8;
  m.layers = layers;
  m.heads = 2;
  m.seq = seq;
  m.ffn = ffn;
  return m;
}

// The fixed token stream: at global position g the input is (7g + 3) mod vocab and the
// target (5g + 1) mod vocab; positions first .. first + n - 1 (a rank's sequences).
struct HostTokens {
  std::vector<int> in, tg;
};
inline HostTokens fixed_tokens(int n, int vocab, int first = 0) {
  HostTokens t{std::vector<int>(std::size_t(n)), std::vector<int>(std::size_t(n))};
  for (int i = 0; i < n; ++i) {
    const int g = first + i;
    t.in[std::size_t(i)] = (7 * g + 3) % vocab;
    t.tg[std::size_t(i)] = (5 * g + 1) % vocab;
  }
  return t;
}

inline Vec<int> to_device(const std::vector<int>& v) {
  Vec<int> d("mini5d::test::tokens", v.size());
  auto h = Kokkos::create_mirror_view(d);
  for (std::size_t i = 0; i < v.size(); ++i) h(i) = v[i];
  Kokkos::deep_copy(d, h);
  return d;
}

// The same tokens on the device, as the model's forward takes them.
struct Batch {
  Vec<int> in, tg;
};
inline Batch fixed_batch(int n, int vocab, int first = 0) {
  const HostTokens t = fixed_tokens(n, vocab, first);
  return {to_device(t.in), to_device(t.tg)};
}

// Adds seeded N(0, scale) noise to every parameter (biases and LayerNorm gains too), so
// that no gradient is trivially zero or one.
inline void perturb(Vec<double> params, unsigned seed, double scale) {
  Vec<double> noise("mini5d::test::noise", params.extent(0));
  fill_random(noise, seed, scale);
  Kokkos::parallel_for(
      "mini5d::test::perturb", Range(0, noise.extent(0)), KOKKOS_LAMBDA(const int i) { params(i) += noise(i); });
}

// The logical (row-major) index of each element of this rank's part of tensor t.
inline std::vector<std::int64_t> logical_indices(const model::TensorSpec& t) {
  std::vector<ShardBlock> blocks;
  model::append_part_blocks(t, 0, t.size(), 0, blocks);
  std::vector<std::int64_t> stride(t.global_shape.size(), 1);
  for (int d = int(stride.size()) - 2; d >= 0; --d) stride[d] = stride[d + 1] * t.global_shape[d + 1];
  std::vector<std::int64_t> out(std::size_t(t.size()));
  for (const auto& b : blocks)
    for (std::int64_t i = 0; i < b.size(); ++i) {
      std::int64_t rest = i, logical = 0;
      for (int d = int(b.extent.size()) - 1; d >= 0; --d) {
        logical += (b.offset[d] + rest % b.extent[d]) * stride[d];
        rest /= b.extent[d];
      }
      out[std::size_t(b.local_offset + i)] = logical;
    }
  return out;
}

// This rank's part of tensor t, read from a host copy of a flat buffer (grads, params).
template <class Flat>
std::vector<double> part_of(const Flat& flat, const model::TensorSpec& t) {
  std::vector<double> v(std::size_t(t.size()));
  for (std::int64_t i = 0; i < t.size(); ++i) v[std::size_t(i)] = flat(t.offset + i);
  return v;
}

// Worst floored-relative difference (floor 1e-3) of `mine`, this rank's part of tensor t
// (already summed over the ranks that hold partial sums of it), from the matching slice
// of `whole`, a host copy of the single-rank model's flat gradient, in which the tensor
// starts at whole_offset.
template <class Flat>
double slice_difference(const std::vector<double>& mine, const model::TensorSpec& t, const Flat& whole,
                        std::int64_t whole_offset) {
  const auto idx = logical_indices(t);
  double worst = 0;
  for (std::int64_t i = 0; i < t.size(); ++i)
    worst = worse(worst, floored_relative(mine[std::size_t(i)], whole(whole_offset + idx[std::size_t(i)]), 1e-3));
  return worst;
}

}  // namespace mini5d::test
