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
#include "mini5d/kernels/adamw.hpp"
#include "mini5d/kernels/views.hpp"
#include "mini5d/optim/segment.hpp"

namespace mini5d::optim {

struct AdamWConfig {
  double beta1 = 0.9, beta2 = 0.95, eps = 1e-8, weight_decay = 0.0;
};

template <class S>
class AdamW {
 public:
  // n: elements of moment state (the sum of the segments' sizes when sharded).
  // piece: the most elements one team updates (a tuning knob; tests use odd sizes).
  AdamW(std::int64_t n, const std::vector<Segment>& segments, AdamWConfig cfg, std::int64_t piece = 4096);
  // One update with learning rate lr; `step` counts updates from 1 (bias correction).
  // grad_factor: the gradient is used times this (the global-norm clipping factor).
  void update(VecU<S> params, VecU<S> grads, double lr, long step, double grad_factor = 1.0);
  Vec<float> m, v;  // first and second moments, fp32
  const AdamWConfig& config() const { return cfg_; }

 private:
  Kokkos::View<kernels::AdamWPiece*, MemSpace> pieces_;
  std::int64_t longest_ = 0;  // the longest piece
  AdamWConfig cfg_;
  mem::Charge mem_, table_mem_;
};

}  // namespace mini5d::optim
