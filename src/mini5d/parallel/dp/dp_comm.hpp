// SPDX-License-Identifier: BSD-3-Clause
// The data-parallel axis's communication, chunk by chunk (a unit's dense or expert
// run, dp/zero_partition.hpp): over the dense-gradient group (d x c x e) for dense
// chunks and over the expert-gradient group (d x c) for expert chunks: gradient
// all-reduce (ZeRO 0-1), gradient reduce-scatter to the owning shard (ZeRO 2-3),
// weight all-gather from the shards (ZeRO 1-3), and scalar sums (loss, squared norms).
// Every call here is                                   collective over the chunk's group
// and accounted by the communication layer.
#pragma once
#include "mini5d/comm/communicator.hpp"
#include "mini5d/parallel/dp/zero_partition.hpp"

namespace mini5d::dp {

class DataParallelComm {
 public:
  // expert: the expert-gradient group (nullptr: the dense group, a model without experts).
  DataParallelComm(comm::Communicator& group, const ZeroPartition& part, comm::Communicator* expert = nullptr)
      : group_(group), expert_(expert ? *expert : group), part_(part) {}
  int size() const { return group_.size(); }
  int rank() const { return group_.rank(); }

  // Sums a chunk's gradients (or a bucket of them) over its group, in place (fp32, or
  // bf16 with parallel.grad_reduce_dtype=bf16).
  template <class T>
  comm::Request start_allreduce(int chunk, VecU<T> grads) {
    return of(chunk).iallreduce(grads, comm::Traffic::grads);
  }
  // Sums a chunk's gradients over its group; this rank's part lands in `my_part`.
  template <class T>
  comm::Request start_reduce_scatter(int chunk, VecU<T> chunk_grads, VecU<T> my_part) {
    return of(chunk).ireduce_scatter(chunk_grads, my_part, part_.counts(chunk), comm::Traffic::grads);
  }
  // Assembles a whole chunk from every rank's part; this rank's part must already sit
  // at its place in `chunk_buf` (fp32 weights, or a bf16 working copy).
  template <class T>
  comm::Request start_gather(int chunk, VecU<T> chunk_buf) {
    return of(chunk).iallgatherv(chunk_buf, part_.counts(chunk), part_.displs(chunk), comm::Traffic::weights);
  }
  void sum(double* values, int n) { group_.allreduce_host(values, n); }
  void sum_experts(double* values, int n) { expert_.allreduce_host(values, n); }

 private:
  comm::Communicator& of(int chunk) { return part_.chunks()[chunk].expert ? expert_ : group_; }
  comm::Communicator& group_;
  comm::Communicator& expert_;
  const ZeroPartition& part_;
};

}  // namespace mini5d::dp
