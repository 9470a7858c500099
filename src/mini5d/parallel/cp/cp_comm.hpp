// SPDX-License-Identifier: BSD-3-Clause
// The context-parallel axis's communication over the c ring (the grid's periodic c
// axis): one operation, a shift of a block to the next rank of the ring while the
// previous rank's block arrives, posted before the compute it overlaps and completed
// after it. The only file of the axis that talks to comm/; every shift is accounted
// under "cp" as activations, its payload the block sent. With c = 1 there is no ring
// and nothing is ever shifted. Besides the shift, statistics a layer needs over the
// whole sequence (the MoE load-balancing counts) are summed over the ring as scalars.
#pragma once
#include "mini5d/comm/communicator.hpp"
#include "mini5d/kernels/views.hpp"

namespace mini5d::cp {

class CpComm {
 public:
  CpComm() = default;  // c = 1
  explicit CpComm(comm::Communicator& ring) : ring_(&ring) {}
  int size() const { return ring_ ? ring_->size() : 1; }
  int rank() const { return ring_ ? ring_->rank() : 0; }
  int next() const { return (rank() + 1) % size(); }
  int prev() const { return (rank() + size() - 1) % size(); }

  // Sends `out` to next() and receives `in` from prev(), non-blocking: test() the
  // request between kernels, wait() before reading `in` or writing `out`.
  //                                               pairwise over the ring (every rank posts)
  template <class S> comm::Request shift(VecU<S> out, VecU<S> in, int tag);
  // values <- their sum over the ring (nothing to do with c = 1).      collective over the ring
  void sum_host(double* values, int n) {
    if (ring_) ring_->allreduce_host(values, n);
  }

 private:
  comm::Communicator* ring_ = nullptr;
};

}  // namespace mini5d::cp
