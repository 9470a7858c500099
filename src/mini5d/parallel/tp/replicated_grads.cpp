// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/parallel/tp/replicated_grads.hpp"

namespace mini5d::tp {

ReplicatedGrads::ReplicatedGrads(TpComm& tp, const std::vector<Runs>& by_unit) : tp_(&tp) {
  std::int64_t at = 0;
  for (const Runs& unit : by_unit) {
    first_run_.push_back(int(host_runs_.size()));
    for (const auto& [begin, end] : unit) {
      host_runs_.push_back({begin, at});
      at += end - begin;
    }
  }
  first_run_.push_back(int(host_runs_.size()));
  host_runs_.push_back({0, at});  // closes the last run
  runs_ = decltype(runs_)("mini5d::tp::replicated_runs", host_runs_.size());
  auto h = Kokkos::create_mirror_view(runs_);
  for (std::size_t i = 0; i < host_runs_.size(); ++i) h(i) = host_runs_[i];
  Kokkos::deep_copy(runs_, h);
  packed_ = Vec<float>("mini5d::tp::replicated_grads", std::size_t(at));
  mem_ = mem::Charge(mem::Category::comm_buffers, mem::view_bytes(packed_));
  table_mem_ = mem::Charge(mem::Category::workspace, mem::view_bytes(runs_));
  reqs_.resize(by_unit.size());
  expected_.assign(by_unit.size(), 0);
  packed_units_.assign(by_unit.size(), 0);
}

void ReplicatedGrads::begin_step() {
  if (!active()) return;
  expected_.assign(expected_.size(), 0);
  packed_units_.assign(packed_units_.size(), 0);
  order_.clear();
  posted_ = 0;
  finished_ = false;
}

void ReplicatedGrads::expect(int unit) {
  if (!active() || finished_ || expected_[std::size_t(unit)]) return;
  expected_[std::size_t(unit)] = 1;
  order_.push_back(unit);
}

void ReplicatedGrads::ready(int unit, VecU<float> grads) {
  if (!active() || finished_ || packed_units_[std::size_t(unit)]) return;
  packed_units_[std::size_t(unit)] = 1;
  const int first = first_run_[std::size_t(unit)], last = first_run_[std::size_t(unit) + 1];
  if (first < last)
    kernels::pack_runs<float>(runs_, first, last, host_runs_[std::size_t(first)].at, host_runs_[std::size_t(last)].at,
                              grads, packed_);
  post_in_order();
}

void ReplicatedGrads::post_in_order() {
  const std::size_t from = posted_;
  while (posted_ < order_.size() && packed_units_[std::size_t(order_[posted_])]) ++posted_;
  if (posted_ == from) return;
  fence("mini5d::tp::replicated_grads_packed");  // MPI reads them next
  for (std::size_t i = from; i < posted_; ++i) {
    const std::size_t u = std::size_t(order_[i]);
    const std::int64_t begin = host_runs_[std::size_t(first_run_[u])].at, end = host_runs_[std::size_t(first_run_[u + 1])].at;
    if (end > begin)
      reqs_[u] = tp_->start_allreduce(Kokkos::subview(VecU<float>(packed_), std::make_pair(begin, end)),
                                      comm::Traffic::grads);
  }
}

void ReplicatedGrads::progress() {
  for (auto& r : reqs_) r.test();
}

void ReplicatedGrads::finish(VecU<float> grads) {
  if (!active() || finished_) return;
  // Every gradient is final now. Units never announced follow in index order.
  for (int u = 0; u < int(expected_.size()); ++u) expect(u);
  for (int u : std::vector<int>(order_)) ready(u, grads);
  post_in_order();
  for (auto& r : reqs_) r.wait();
  finished_ = true;
  const int runs = int(host_runs_.size()) - 1;
  if (runs > 0) kernels::unpack_runs<float>(runs_, 0, runs, 0, host_runs_.back().at, grads, packed_);
}

}  // namespace mini5d::tp
