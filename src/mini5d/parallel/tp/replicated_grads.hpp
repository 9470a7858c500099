// SPDX-License-Identifier: BSD-3-Clause
// The gradients of the tensors every tensor-parallel rank holds (norm weights and
// biases, row-parallel biases, the position table) when sequence parallelism gives each
// rank its own tokens: partial sums until added over the t group. Each unit's runs of
// them are packed into one message whose all-reduce starts as soon as the unit's
// gradients are final for the step (after its data-parallel reduction: the two sums
// commute, but must not write the same memory at once), so they travel while the
// backward goes on, like the data-parallel buckets. The sums are unpacked into the
// gradient buffer when the step's reductions finish. One message per unit instead of
// one blocking call per tensor.
// MPI matches a communicator's non-blocking collectives in the order they are posted,
// and when a unit's data-parallel reduction completes differs between ranks: a unit is
// packed as soon as it is final, but posted in the order the units were announced
// (expect(), called in the backward's order, the same on every rank of the group).
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "mini5d/comm/communicator.hpp"
#include "mini5d/core/memory_ledger.hpp"
#include "mini5d/kernels/pack_runs.hpp"
#include "mini5d/parallel/tp/tp_comm.hpp"

namespace mini5d::tp {

class ReplicatedGrads {
 public:
  using Runs = std::vector<std::pair<std::int64_t, std::int64_t>>;  // [begin, end) in the gradient buffer

  ReplicatedGrads() = default;  // nothing to reduce
  // by_unit[u]: unit u's replicated runs in the gradient buffer (the same on every rank
  // of the group). The packed buffer is charged as a communication buffer.
  ReplicatedGrads(TpComm& tp, const std::vector<Runs>& by_unit);
  ReplicatedGrads(ReplicatedGrads&&) = default;
  ReplicatedGrads& operator=(ReplicatedGrads&&) = default;

  bool active() const { return tp_ != nullptr; }
  std::int64_t elements() const { return host_runs_.empty() ? 0 : host_runs_.back().at; }
  void begin_step();
  // Unit u's gradients become final next, in this order on every rank of the group.
  void expect(int unit);
  // Unit u's gradients in `grads` are final for the step: pack them, and post the sums of
  // the expected units, in order, up to the first one not yet final. Once per unit and
  // step (later calls do nothing).
  void ready(int unit, VecU<float> grads);
  // Posts the units not started yet, waits for every sum and unpacks it into `grads`.
  // Once per step: after it, calls until the next begin_step() do nothing.
  void finish(VecU<float> grads);
  void progress();

 private:
  TpComm* tp_ = nullptr;
  Kokkos::View<kernels::PackedRun*, MemSpace> runs_;
  std::vector<kernels::PackedRun> host_runs_;  // the table, closing entry included
  std::vector<int> first_run_;                 // unit u: runs [first_run_[u], first_run_[u + 1])
  Vec<float> packed_;
  void post_in_order();
  std::vector<comm::Request> reqs_;  // one per unit
  std::vector<char> expected_, packed_units_;
  std::vector<int> order_;  // expected units, in the order announced
  std::size_t posted_ = 0;  // order_[0, posted_) are posted
  bool finished_ = true;
  mem::Charge mem_, table_mem_;
};

}  // namespace mini5d::tp
