// SPDX-License-Identifier: BSD-3-Clause
// The data-parallel axis's communication, unit by unit, over the dense-gradient
// group (d x c x e): gradient all-reduce (ZeRO 0-1), gradient reduce-scatter to the
// owning shard (ZeRO 2-3), weight all-gather from the shards (ZeRO 1-3), and scalar
// sums (loss, squared norms). Every call here is                collective over the group
// and accounted by the communication layer.
#pragma once
#include "mini5d/comm/communicator.hpp"
#include "mini5d/parallel/dp/zero_partition.hpp"

namespace mini5d::dp {

class DataParallelComm {
 public:
  DataParallelComm(comm::Communicator& group, const ZeroPartition& part) : group_(group), part_(part) {}
  int size() const { return group_.size(); }
  int rank() const { return group_.rank(); }

  // Sums a unit's gradients over the group, in place.
  comm::Request start_allreduce(VecU<float> unit_grads) {
    return group_.iallreduce(unit_grads, comm::Traffic::grads);
  }
  // Sums a unit's gradients over the group; this rank's part lands in `my_part`.
  comm::Request start_reduce_scatter(int unit, VecU<float> unit_grads, VecU<float> my_part) {
    return group_.ireduce_scatter(unit_grads, my_part, part_.counts(unit), comm::Traffic::grads);
  }
  // Assembles a whole unit from every rank's part; this rank's part must already sit
  // at its place in `unit_buf`.
  comm::Request start_gather(int unit, VecU<float> unit_buf) {
    return group_.iallgatherv(unit_buf, part_.counts(unit), part_.displs(unit), comm::Traffic::weights);
  }
  void sum(double* values, int n) { group_.allreduce_host(values, n); }

 private:
  comm::Communicator& group_;
  const ZeroPartition& part_;
};

}  // namespace mini5d::dp
