// SPDX-License-Identifier: BSD-3-Clause
// The pipeline axis's communication: non-blocking point-to-point of boundary
// activations and their gradients between neighbouring pipeline ranks, on the p
// communicator (the grid's p axis), accounted under "pp" as activations. The only
// file of the axis that talks to comm/. A message is named by its direction,
// micro-batch and receiving virtual stage, so every receive can be posted before the
// step runs and matches exactly one send.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>

#include "mini5d/comm/communicator.hpp"
#include "mini5d/kernels/views.hpp"
#include "mini5d/parallel/pp/stage.hpp"

namespace mini5d::pp {

enum class Direction { forward = 0, backward = 1 };

class PpComm {
 public:
  // `virtual_stages`: p * v; `micro_batches`: m (together they bound the tags).
  PpComm(comm::Communicator& group, int virtual_stages, int micro_batches)
      : group_(group), P_(virtual_stages), m_(micro_batches) {
    int* ub = nullptr;
    int found = 0;
    MPI_Comm_get_attr(group.get(), MPI_TAG_UB, &ub, &found);
    if (found && ub && std::int64_t(2) * P_ * m_ > std::int64_t(*ub))
      throw std::invalid_argument("mini5d: 2 * p * virtual_stages * train.accumulation = " +
                                  std::to_string(2 * P_ * m_) + " exceeds this MPI's largest tag " +
                                  std::to_string(*ub));
  }
  int size() const { return group_.size(); }
  int rank() const { return group_.rank(); }
  comm::Request post_recv(VecU<Byte> buf, int from, Direction d, int mb, int to_virtual_stage) {
    return group_.irecv<Byte>(buf, from, tag(d, mb, to_virtual_stage), comm::Traffic::activations);
  }
  comm::Request send(VecU<Byte> buf, int to, Direction d, int mb, int to_virtual_stage) {
    return group_.isend<Byte>(buf, to, tag(d, mb, to_virtual_stage), comm::Traffic::activations);
  }
  // Lines the ranks up before a step, so their step clocks start together.
  void barrier() {
    double x = 0;
    group_.allreduce_host(&x, 1);
  }
  // Largest value over the pipeline ranks (host scalars).
  double max(double v) {
    group_.allreduce_host(&v, 1, comm::Communicator::Op::max);
    return v;
  }

 private:
  int tag(Direction d, int mb, int vs) const { return (int(d) * P_ + vs) * m_ + mb; }
  comm::Communicator& group_;
  int P_, m_;
};

}  // namespace mini5d::pp
