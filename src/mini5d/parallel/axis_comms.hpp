// SPDX-License-Identifier: BSD-3-Clause
// Every accounted communicator a training run uses, built once from the process grid:
// one per axis and derived group, each named by the account its traffic is charged to
// (comm/accounts.hpp), and the per-axis wrappers the layers call (tp, cp, ep). The
// trainer, the optimizer and the layers borrow from this one object; nothing else
// creates a communicator for training.
//   world      every rank                      step scalars, stop flags, end-of-run gathers
//   dp         dense-gradient group d x c x e  ZeRO over dense tensors
//   dp_expert  expert-gradient group d x c     ZeRO over expert tensors
//   tp         the t group                     Megatron cuts, sequence parallelism
//   cp         the c ring                      ring attention
//   ep         the expert-parallel group e x t dispatch and combine all-to-alls
//   pp         the p group                     pipeline boundaries
//   tp (kv)    t/kv_heads consecutive t ranks  grouped-query attention with t > kv_heads:
//                                              the shared key/value rows' gradients
//   pp (ends)  stages 0 and p-1 of a p group   a tied embedding's gradients
//                                              (model.tie_embeddings, p > 1)
#pragma once
#include <memory>

#include "mini5d/comm/communicator.hpp"
#include "mini5d/grid/process_grid.hpp"
#include "mini5d/parallel/cp/cp_comm.hpp"
#include "mini5d/parallel/ep/ep_comm.hpp"
#include "mini5d/parallel/tp/tp_comm.hpp"

namespace mini5d::parallel {

class AxisComms {
 public:
  // Not collective: the grid's communicators exist already.
  AxisComms(const grid::ProcessGrid& grid, comm::Transport transport)
      : world_(grid.cart(), "world", transport),
        dp_(grid.dense_grad(), "dp", transport),
        dp_expert_(grid.expert_grad(), "dp_expert", transport),
        tp_(grid.axis(grid::Axis::t), "tp", transport),
        cp_(grid.axis(grid::Axis::c), "cp", transport),
        ep_(grid.expert_parallel(), "ep", transport),
        pp_(grid.axis(grid::Axis::p), "pp", transport),
        tensor_(tp_),
        ring_(cp_),
        experts_(ep_),
        transport_(transport),
        t_group_(grid.axis(grid::Axis::t).get()),
        p_group_(grid.axis(grid::Axis::p).get()) {}
  AxisComms(const AxisComms&) = delete;
  AxisComms& operator=(const AxisComms&) = delete;

  comm::Communicator& world() { return world_; }
  comm::Communicator& dp() { return dp_; }
  comm::Communicator& dp_expert() { return dp_expert_; }
  comm::Communicator& pp() { return pp_; }
  const comm::Communicator& world() const { return world_; }
  const comm::Communicator& dp() const { return dp_; }
  const comm::Communicator& dp_expert() const { return dp_expert_; }
  const comm::Communicator& ep_group() const { return ep_; }
  // The layers' view of their axes.
  tp::TpComm& tensor() { return tensor_; }
  cp::CpComm& ring() { return ring_; }
  ep::EpComm& experts() { return experts_; }
  // The key/value group of grouped-query attention with t > kv_heads: the `replicas`
  // consecutive tensor ranks that hold the same key/value head, accounted under "tp"
  // like the rest of the t axis's traffic.                  collective over the t group
  tp::TpComm& split_kv_group(int replicas) {
    MPI_Comm sub = MPI_COMM_NULL;
    int r = 0;
    MPI_Comm_rank(t_group_, &r);
    MPI_Comm_split(t_group_, r / replicas, r, &sub);
    kv_ = std::make_unique<comm::Communicator>(grid::CommHandle(sub), "tp", transport_);
    kv_tensor_ = std::make_unique<tp::TpComm>(*kv_);
    return *kv_tensor_;
  }
  // The two ends of this rank's pipeline (stages 0 and p-1 at the same d, c, e, t),
  // accounted under "pp"; nullptr on a middle stage or at p = 1.
  //                                                          collective over the p group
  comm::Communicator* split_pipeline_ends() {
    int r = 0, p = 1;
    MPI_Comm_rank(p_group_, &r);
    MPI_Comm_size(p_group_, &p);
    if (p == 1) return nullptr;
    const bool end = r == 0 || r == p - 1;
    MPI_Comm sub = MPI_COMM_NULL;
    MPI_Comm_split(p_group_, end ? 0 : MPI_UNDEFINED, r, &sub);
    if (!end) return nullptr;
    ends_ = std::make_unique<comm::Communicator>(grid::CommHandle(sub), "pp", transport_);
    return ends_.get();
  }

 private:
  comm::Communicator world_, dp_, dp_expert_, tp_, cp_, ep_, pp_;
  tp::TpComm tensor_;
  cp::CpComm ring_;
  ep::EpComm experts_;
  comm::Transport transport_;
  MPI_Comm t_group_, p_group_;
  std::unique_ptr<comm::Communicator> kv_, ends_;
  std::unique_ptr<tp::TpComm> kv_tensor_;
};

}  // namespace mini5d::parallel
