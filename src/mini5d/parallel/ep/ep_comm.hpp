// SPDX-License-Identifier: BSD-3-Clause
// The expert-parallel axis's communication over the e x t group (grid::ProcessGrid::
// expert_parallel(): with t = 1 it is the e axis; with t > 1 the tensor ranks, which
// hold different sequence-parallel token rows, are expert ranks too). The only file
// of the axis that talks to comm/; every call is accounted under "ep":
//   the count exchange (every rank's per-expert token counts, as host scalars),
//   the all-to-all-v of token rows (dispatch and combine, forward and backward).
// With a group of one every operation is local (a copy at most), so the single-rank
// model runs the same code.
#pragma once
#include <vector>

#include "mini5d/comm/communicator.hpp"
#include "mini5d/kernels/views.hpp"

namespace mini5d::ep {

class EpComm {
 public:
  EpComm() = default;  // a group of one
  explicit EpComm(comm::Communicator& group) : group_(&group) {}
  int size() const { return group_ ? group_->size() : 1; }
  int rank() const { return group_ ? group_->rank() : 0; }

  // Sums host scalars over the group, in place (squared norms of the expert
  // gradients).                                                    collective over the group
  void allreduce_host(double* values, int n) {
    if (size() > 1) group_->allreduce_host(values, n);
  }
  // all [size() * n] <- every rank's `mine` [n], in rank order.  collective over the group
  void exchange_counts(const std::vector<double>& mine, std::vector<double>& all);
  // Rows of width `width`: send_rows[q] consecutive rows of `send` (in rank order) go
  // to rank q; recv_rows[s] rows from rank s land in `recv`, in rank order.
  //                                                                  collective over the group
  template <class S>
  void alltoallv_rows(CMatU<S> send, const std::vector<int>& send_rows, MatU<S> recv,
                      const std::vector<int>& recv_rows);

 private:
  comm::Communicator* group_ = nullptr;
};

}  // namespace mini5d::ep
