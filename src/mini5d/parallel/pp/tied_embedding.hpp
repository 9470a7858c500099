// SPDX-License-Identifier: BSD-3-Clause
// The tied embedding across the pipeline (model.tie_embeddings with p > 1): the first
// stage owns wte, the last stage's head multiplies by its own copy of it (Megatron's
// scheme). Both start from the same values; every step, after ZeRO's data-parallel
// reduction and before the gradient norm, the two gradients are summed over the two
// ends of the pipeline, so both copies take identical updates and stay bit-identical.
// The sum is linear, so doing it after the reduction over d gives what doing it before
// would. The two-rank group (stage 0 and stage p-1 at the same d, c, e and t
// coordinates, parallel::AxisComms::split_pipeline_ends) is made once, at start-up; its
// traffic is accounted under "pp" as gradients (the planner's plan/cost/axis_traffic.cpp
// counts it).
#pragma once
#include <cstdint>

#include "mini5d/comm/communicator.hpp"
#include "mini5d/kernels/views.hpp"

namespace mini5d::pp {

class TiedEmbedding {
 public:
  // `ends`: the two ends' group; nullptr (a middle stage, p = 1, no tying): inactive.
  // [offset, offset + size): wte (first stage) or its copy (last stage) in the flat
  // gradient buffer.
  TiedEmbedding() = default;
  TiedEmbedding(comm::Communicator* ends, std::int64_t offset, std::int64_t size)
      : ends_(ends), offset_(offset), size_(size) {}
  bool active() const { return ends_ != nullptr; }
  // Sums this rank's gradient of wte or of its copy, in `grads` (the whole flat buffer,
  // as ZeRO 0-1 keep it), with the other end's, in place.
  //                                                  collective over the two ends
  void sum(VecU<float> grads) {
    if (!ends_) return;
    fence("mini5d::pp::tied_grad_ready");  // MPI reads the reduced gradient next
    ends_->allreduce<float>(Kokkos::subview(grads, std::make_pair(offset_, offset_ + size_)), comm::Traffic::grads);
  }

 private:
  comm::Communicator* ends_ = nullptr;
  std::int64_t offset_ = 0, size_ = 0;
};

}  // namespace mini5d::pp
