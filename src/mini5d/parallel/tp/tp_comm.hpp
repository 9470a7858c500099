// SPDX-License-Identifier: BSD-3-Clause
// The tensor-parallel axis's communication over the t group (the grid's t axis,
// consecutive ranks, inside a node): the all-reduce of the Megatron f/g operators,
// the all-gather and reduce-scatter of sequence-parallel regions (on whole token rows:
// rank r holds rows r*N/t .. (r+1)*N/t of a [N, C] activation), and the small
// reductions of the vocab-parallel cross-entropy. The only file of the axis that talks
// to comm/; every call is accounted under "tp". With t = 1 every operation is local
// (a copy at most), so the single-rank model runs the same code without a group.
#pragma once
#include "mini5d/comm/communicator.hpp"
#include "mini5d/kernels/views.hpp"

namespace mini5d::tp {

class TpComm {
 public:
  TpComm() = default;  // t = 1
  explicit TpComm(comm::Communicator& group) : group_(&group) {}
  int size() const { return group_ ? group_->size() : 1; }
  int rank() const { return group_ ? group_->rank() : 0; }

  // Sums x over the group, in place.                           collective over the group
  template <class S> void allreduce(MatU<S> x);
  template <class S> void allreduce(VecU<S> x, comm::Traffic t = comm::Traffic::activations);
  // The same, posted: x is summed once the request completes (nothing to do at t = 1).
  comm::Request start_allreduce(VecU<float> x, comm::Traffic t) {
    return size() > 1 ? group_->iallreduce(x, t) : comm::Request();
  }
  // full [N, C] <- the rows of every rank (this rank's `part` [N/t, C] among them).
  //                                                            collective over the group
  template <class S> void allgather_rows(MatU<S> full, CMatU<S> part);
  // part [N/t, C] <- this rank's rows of the sum over the group of `full` [N, C].
  //                                                            collective over the group
  template <class S> void reduce_scatter_rows(MatU<S> part, MatU<S> full);
  // all [t * n] <- every rank's `mine` [n], in rank order.     collective over the group
  template <class S> void allgather(VecU<S> all, CVecU<S> mine);
  // Sums host scalars over the group, in place.               collective over the group
  void allreduce_host(double* values, int n) {
    if (size() > 1) group_->allreduce_host(values, n);
  }

 private:
  comm::Communicator* group_ = nullptr;
};

}  // namespace mini5d::tp
