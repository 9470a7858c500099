// SPDX-License-Identifier: BSD-3-Clause
// ZeroAdamW's weights: the update (of the weights, the stage-3 shard or a bf16 run's
// master weights), the refresh of a bf16 working copy, the weight all-gathers of stages
// 1-2, the unit gathers of stage 3, and the buffers a checkpoint reads and writes.
#include "mini5d/kernels/convert.hpp"
#include "mini5d/parallel/dp/zero_adamw.hpp"
#include "mini5d/parallel/dp/zero_views.hpp"

namespace mini5d::dp {

using detail::part_of;
using detail::slice;
using detail::wait_all;

template <class S>
void ZeroAdamW<S>::start_gather(int buffer, int unit) {
  Gathered& g = gathered_[buffer];
  // Every chunk's own part is copied on the rank's instance, then one instance fence
  // (MPI reads the parts next), instead of two global fences per chunk.
  for (int c : part_.unit_chunks(unit)) {
    const Span p = part_.my_part(c);
    const Vec<S>& shard = working_shard();
    Kokkos::deep_copy(ExecSpace(), part_of(g.data, p.begin, p.size()), part_of(shard, part_.shard_offset(c), p.size()));
  }
  fence("mini5d::zero::own_parts_ready");
  for (int c : part_.unit_chunks(unit)) {
    const Span span = part_.chunks()[c].span;
    g.reqs.push_back(dp_.start_gather<S>(c, part_of(g.data, span.begin, span.size())));
  }
}

template <class S>
void ZeroAdamW<S>::need_weights(int unit, bool forward) {
  // Where the unit's weights are (or are arriving), or the buffer to gather them into
  // now; and the unit to prefetch into the other buffer while this one computes.
  const zero3::GatherBuffers::Need n = buffers_.need(unit, forward);
  Gathered& g = gathered_[std::size_t(n.buffer)];
  if (n.gather) {
    wait_all(g.reqs);
    start_gather(n.buffer, unit);
    ++blocking_;
  }
  wait_all(g.reqs);
  model_.bind_unit(unit, g.data.data(), nullptr);
  if (n.prefetch >= 0) {
    Gathered& other = gathered_[std::size_t(1 - n.buffer)];
    wait_all(other.reqs);
    start_gather(1 - n.buffer, n.prefetch);
    ++prefetched_;
  }
}

template <class S>
void ZeroAdamW<S>::update(double lr, long step, double grad_factor) {
  VecU<float> grads = stage_ >= 2 ? VecU<float>(grad_shard_) : VecU<float>(model_grads());
  VecU<float> params;
  if (stage_ >= 3)
    params = weight_shard_;
  else if constexpr (is_bf16_v<S>)
    params = master_;
  else
    params = model_params();
  adamw_->update(params, grads, lr, step, grad_factor);
  refresh_working_copy();
}

template <class S>
void ZeroAdamW<S>::refresh_working_copy() {
  if constexpr (is_bf16_v<S>) {
    if (stage_ == 0) kernels::convert("mini5d::optim::working_copy", model_params(), master_);
    if (stage_ >= 3) kernels::convert("mini5d::optim::working_shard", working_shard_, weight_shard_);
    if (stage_ == 1 || stage_ == 2) {
      // This rank's part of every unit, rounded into its place; the rest is gathered.
      const auto& units = param_layout().units();
      for (int c = 0; c < int(part_.chunks().size()); ++c) {
        const auto& ch = part_.chunks()[c];
        const Span p = part_.my_part(c);
        kernels::convert("mini5d::optim::working_copy_part",
                         part_of(model_params(), units[ch.unit].offset + p.begin, p.size()),
                         slice(master_, part_.shard_offset(c), p.size()));
      }
    }
  }
  if (stage_ == 1 || stage_ == 2) post_weight_gathers();
}

template <class S>
void ZeroAdamW<S>::post_weight_gathers() {
  fence("mini5d::optim::updated_part_ready");  // MPI reads the updated parts next
  // Each rank updated its part of every unit; the rest arrives while the next forward
  // runs, in the order it needs the units.
  const auto& units = param_layout().units();
  for (auto& r : weight_gathers_) r.wait();
  weight_gathers_.resize(part_.chunks().size());
  for (int c = 0; c < int(part_.chunks().size()); ++c) {
    const auto& ch = part_.chunks()[c];
    weight_gathers_[c] =
        dp_.start_gather<S>(c, part_of(model_params(), units[ch.unit].offset + ch.span.begin, ch.span.size()));
  }
}

template <class S>
void ZeroAdamW<S>::weights_loaded() {
  // fp32: the checkpoint was read into the weights themselves (the model's, or the
  // stage-3 shard, gathered when used). bf16: the working copy follows the master.
  if constexpr (is_bf16_v<S>) refresh_working_copy();
}

template <class S>
void ZeroAdamW<S>::settle() {
  finish_reductions();
  for (auto& r : weight_gathers_) r.wait();
}

template <class S>
ZeroOptimizer::StateBuffer ZeroAdamW<S>::weights() const {
  if (stage_ >= 3) return {weight_shard_, false};
  if constexpr (is_bf16_v<S>)
    return {master_, stage_ == 0};
  else
    return {model_params(), true};
}
template <class S>
ZeroOptimizer::StateBuffer ZeroAdamW<S>::exp_avg() const { return {adamw_->m, stage_ == 0}; }
template <class S>
ZeroOptimizer::StateBuffer ZeroAdamW<S>::exp_avg_sq() const { return {adamw_->v, stage_ == 0}; }

// The members defined in this file, for both storage types (zero_adamw.cpp
// instantiates the class and its other members).
#define MINI5D_ZERO_WEIGHTS(S)                                                        \
  template void ZeroAdamW<S>::start_gather(int, int);                                 \
  template void ZeroAdamW<S>::need_weights(int, bool);                                \
  template void ZeroAdamW<S>::update(double, long, double);                           \
  template void ZeroAdamW<S>::refresh_working_copy();                                 \
  template void ZeroAdamW<S>::post_weight_gathers();                                  \
  template void ZeroAdamW<S>::weights_loaded();                                       \
  template void ZeroAdamW<S>::settle();                                               \
  template ZeroOptimizer::StateBuffer ZeroAdamW<S>::weights() const;                  \
  template ZeroOptimizer::StateBuffer ZeroAdamW<S>::exp_avg() const;                  \
  template ZeroOptimizer::StateBuffer ZeroAdamW<S>::exp_avg_sq() const;
MINI5D_ZERO_WEIGHTS(float)
MINI5D_ZERO_WEIGHTS(bf16)
#undef MINI5D_ZERO_WEIGHTS

}  // namespace mini5d::dp
