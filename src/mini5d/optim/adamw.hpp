// SPDX-License-Identifier: BSD-3-Clause
// AdamW (Loshchilov & Hutter) on flat buffers: fp32 moments whatever the parameter
// type, bias correction, decoupled weight decay applied only to the tensors the layout
// marks (matrices and embeddings, not biases or LayerNorm gains), and clipping of the
// gradient by its global L2 norm. Working on flat buffers with per-tensor segments is
// what lets ZeRO shard the state later without touching the model. One update is one
// kernel launch over every segment: the segments are cut into pieces of at most
// `piece` elements, a table of pieces lives on the device, and each team of threads
// updates one piece (consecutive threads, consecutive elements).
#pragma once
#include <cstdint>
#include <vector>

#include "mini5d/core/memory_ledger.hpp"
#include "mini5d/kernels/views.hpp"

namespace mini5d::optim {

struct AdamWConfig {
  double beta1 = 0.9, beta2 = 0.95, eps = 1e-8, weight_decay = 0.0;
};

// A contiguous run of elements with its own decay setting, and where the run starts
// in each of the three buffers the update touches: parameters, gradients and the
// moments. Unsharded they coincide; under ZeRO the moments (stage 1), gradients
// (stage 2) and parameters (stage 3) are shard-local buffers with their own offsets.
struct Segment {
  std::int64_t param_offset, grad_offset, state_offset, size;
  bool decay;
};
// A segment at the same offset in all three buffers.
inline Segment segment(std::int64_t offset, std::int64_t size, bool decay) {
  return {offset, offset, offset, size, decay};
}

// One row of the device table: a run of at most `piece` elements of one segment.
struct AdamWPiece {
  std::int64_t param_offset, grad_offset, state_offset, size;
  int decay;
};

template <class S>
class AdamW {
 public:
  // n: elements of moment state (the sum of the segments' sizes when sharded).
  // piece: the most elements one team updates (a tuning knob; tests use odd sizes).
  AdamW(std::int64_t n, const std::vector<Segment>& segments, AdamWConfig cfg, std::int64_t piece = 4096);
  // One update with learning rate lr; `step` counts updates from 1 (bias correction).
  void update(VecU<S> params, VecU<S> grads, double lr, long step);
  Vec<float> m, v;  // first and second moments, fp32
  const AdamWConfig& config() const { return cfg_; }

 private:
  Kokkos::View<AdamWPiece*, MemSpace> pieces_;
  std::int64_t longest_ = 0;  // the longest piece
  AdamWConfig cfg_;
  mem::Charge mem_, table_mem_;
};

// Sum of squares of a flat gradient buffer, in double.
template <class S>
double sum_of_squares(VecU<S> g);
// Scales g by max_norm / norm when norm > max_norm (max_norm > 0); returns the factor.
template <class S>
double clip_by_global_norm(VecU<S> g, double norm, double max_norm);

}  // namespace mini5d::optim
