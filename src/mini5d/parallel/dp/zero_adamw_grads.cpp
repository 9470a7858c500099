// SPDX-License-Identifier: BSD-3-Clause
// ZeroAdamW's gradient reductions: a unit's gradients posted once its backward is done
// (all-reduced in buckets at ZeRO 0-1, reduce-scattered into the shard at 2-3), in fp32
// or, with parallel.grad_reduce_dtype=bf16, rounded to bf16 for the wire and widened
// back once summed; the replicated tensors' sums over t started as units complete.
#include <algorithm>

#include "mini5d/kernels/accumulate.hpp"
#include "mini5d/kernels/convert.hpp"
#include "mini5d/parallel/dp/zero_adamw.hpp"
#include "mini5d/parallel/dp/zero_views.hpp"

namespace mini5d::dp {

using detail::part_of;
using detail::slice;
using detail::wait_all;

template <class S>
void ZeroAdamW<S>::after_backward(int unit) {
  const auto& u = param_layout().units()[unit];
  if (stage_ <= 1 && !last_) return;  // gradients keep accumulating locally
  fence("mini5d::optim::unit_grads_ready");  // MPI reads the unit's gradients next
  if (stage_ <= 1) {
    const std::size_t from = inflight_.size();
    struct Bucket {
      int chunk;
      std::int64_t offset, size;  // in the flat buffer
    };
    std::vector<Bucket> buckets;
    for (int c : part_.unit_chunks(unit)) {
      const Span span = part_.chunks()[c].span;
      for (std::int64_t at = 0; at < span.size(); at += bucket_)
        buckets.push_back({c, u.offset + span.begin + at, std::min(bucket_, span.size() - at)});
    }
    if (reduce_bf16_) {
      // The fp32 main gradients rounded to bf16 for the wire; widened back once summed.
      for (const Bucket& b : buckets)
        kernels::convert("mini5d::dp::grads_to_bf16", part_of(wire_, b.offset, b.size), slice(model_grads(), b.offset, b.size));
      fence("mini5d::dp::bf16_grads_ready");
    }
    for (const Bucket& b : buckets) {
      if (reduce_bf16_) {
        inflight_.push_back(dp_.start_allreduce<bf16>(b.chunk, part_of(wire_, b.offset, b.size)));
        wire_buckets_.push_back({b.offset, b.size, false});
      } else {
        inflight_.push_back(dp_.start_allreduce<float>(b.chunk, slice(model_grads(), b.offset, b.size)));
      }
    }
    if (tp_grads_.active() || kv_grads_.active()) {
      tp_grads_.expect(unit);
      kv_grads_.expect(unit);
      reducing_.push_back({unit, from, inflight_.size()});
      start_replicated_sums();
    }
    return;
  }
  Slot& s = slots_[next_slot_];
  if (reduce_bf16_) {
    kernels::convert("mini5d::dp::unit_grads_to_bf16", part_of(s.wire, 0, u.size), slice(s.grads, 0, u.size));
    fence("mini5d::dp::bf16_grads_ready");
  }
  // The unit's parts of the reduced sums land one after the other, as in the shard.
  for (int c : part_.unit_chunks(unit)) {
    const Span span = part_.chunks()[c].span;
    const std::int64_t at = part_.shard_offset(c) - part_.unit_shard_offset(unit);
    const std::int64_t mine = part_.my_part(c).size();
    if (reduce_bf16_)
      s.reqs.push_back(dp_.start_reduce_scatter<bf16>(c, part_of(s.wire, span.begin, span.size()),
                                                      part_of(s.wire_part, at, mine)));
    else
      s.reqs.push_back(dp_.start_reduce_scatter<float>(c, slice(s.grads, span.begin, span.size()),
                                                       slice(s.part, at, mine)));
  }
  s.posted = true;
  s.last = last_;
  if (last_) {
    tp_grads_.expect(unit);
    kv_grads_.expect(unit);
  }
  next_slot_ = 1 - next_slot_;
}

template <class S>
void ZeroAdamW<S>::start_replicated_sums() {
  // A unit's own all-reduces done (test() also progresses them): its replicated
  // gradients are final, and their sum over t can start.
  auto done = [&](const Reducing& r) {
    bool all = true;
    for (std::size_t i = r.from; i < r.to; ++i) all = inflight_[i].test() && all;
    if (all) {
      if (widen_reduced(r.from, r.to)) fence("mini5d::dp::reduced_grads_widened");  // MPI reads them next
      tp_grads_.ready(r.unit, grad_buffer());
      kv_grads_.ready(r.unit, grad_buffer());
    }
    return all;
  };
  reducing_.erase(std::remove_if(reducing_.begin(), reducing_.end(), done), reducing_.end());
}

// grad_reduce_dtype=bf16, ZeRO 0-1: the summed buckets [from, to) of inflight_ (all
// complete) widened into the fp32 main gradients, each once. Returns whether any was.
template <class S>
bool ZeroAdamW<S>::widen_reduced(std::size_t from, std::size_t to) {
  bool any = false;
  for (std::size_t i = from; i < to && i < wire_buckets_.size(); ++i) {
    WireBucket& b = wire_buckets_[i];
    if (b.widened) continue;
    kernels::convert("mini5d::dp::reduced_grads_to_fp32", slice(model_grads(), b.offset, b.size),
                     part_of(wire_, b.offset, b.size));
    b.widened = any = true;
  }
  return any;
}

template <class S>
void ZeroAdamW<S>::drain(Slot& s) {
  if (!s.posted) return;
  wait_all(s.reqs);
  const std::int64_t n = part_.unit_part_size(s.unit);
  if (reduce_bf16_) kernels::convert("mini5d::dp::bf16_part_to_fp32", slice(s.part, 0, n), part_of(s.wire_part, 0, n));
  kernels::add_into<float>(slice(grad_shard_, part_.unit_shard_offset(s.unit), n), slice(s.part, 0, n));
  s.posted = false;
  if (s.last) {
    tp_grads_.ready(s.unit, grad_buffer());
    kv_grads_.ready(s.unit, grad_buffer());
  }
}

template <class S>
void ZeroAdamW<S>::finish_reductions() {
  for (auto& r : inflight_) r.wait();
  if (widen_reduced(0, inflight_.size())) fence("mini5d::dp::reduced_grads_widened");
  wire_buckets_.clear();
  inflight_.clear();
  reducing_.clear();  // all done: finish() below starts what has not started
  for (auto& s : slots_) drain(s);
  // With sequence parallelism each tensor-parallel rank saw its own tokens: the
  // gradients of the tensors they all hold are partial sums until added over the
  // group (once per step: settle() and saves come here again).
  tp_grads_.finish(grad_buffer());
  kv_grads_.finish(grad_buffer());
}

// The members defined in this file, for both storage types (zero_adamw.cpp
// instantiates the class and its other members).
#define MINI5D_ZERO_GRADS(S)                                                    \
  template void ZeroAdamW<S>::after_backward(int);                              \
  template void ZeroAdamW<S>::start_replicated_sums();                          \
  template bool ZeroAdamW<S>::widen_reduced(std::size_t, std::size_t);          \
  template void ZeroAdamW<S>::drain(Slot&);                                     \
  template void ZeroAdamW<S>::finish_reductions();
MINI5D_ZERO_GRADS(float)
MINI5D_ZERO_GRADS(bf16)
#undef MINI5D_ZERO_GRADS

}  // namespace mini5d::dp
