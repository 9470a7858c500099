// SPDX-License-Identifier: BSD-3-Clause
// The invariance oracle's single-rank reference (invariance.hpp), run once per test
// world and shared. Each rank used to run its own copy on MPI_COMM_SELF: the same run
// world-size times over, which on the CI's 2 cores a 32-rank test paid 32 times per case.
// World rank 0 now runs the deck while the other ranks sleep (idle_barrier), then
// broadcasts what the oracle and the tests read of it: each step's statistics and the
// parameters' checksums. The figures are rank 0's run's, bit for bit, on every rank.
// A reference that fails on rank 0 (a deck it refuses) fails on every rank with rank 0's
// reason, so no rank is left waiting. Collective over the world: call it outside
// on_first_group.
#pragma once
#include <mpi.h>

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "mini5d/comm/agreement.hpp"
#include "mini5d/core/deck.hpp"
#include "mini5d/train/param_checksum.hpp"
#include "mini5d/train/trainer.hpp"
#include "mpi_util.hpp"
#include "state_compare.hpp"

namespace mini5d::test {

// What a test reads of the single-rank run: the step statistics the oracle and the axis
// tests compare (loss, gradient norm, learning rate, the experts' loads and aux loss),
// and the parameter checksums after the last step.
class Reference {
 public:
  const std::vector<train::StepStats>& history() const { return history_; }
  const std::map<std::string, train::TensorChecksum>& checksums() const { return checksums_; }

  static Reference run(const Deck& deck);

 private:
  std::vector<train::StepStats> history_;
  std::map<std::string, train::TensorChecksum> checksums_;

  void broadcast_history();
};

// Per step: step, loss, lr, grad_norm, skipped, imbalance, dropped, aux_loss, the number
// of expert loads, the loads; as doubles, so every value comes back exactly.
inline void Reference::broadcast_history() {
  std::vector<double> v = {double(history_.size())};
  for (const auto& s : history_) {
    v.insert(v.end(), {double(s.step), s.loss, s.lr, s.grad_norm, s.skipped ? 1.0 : 0.0, s.imbalance, s.dropped,
                       s.aux_loss, double(s.expert_load.size())});
    v.insert(v.end(), s.expert_load.begin(), s.expert_load.end());
  }
  long n = long(v.size());
  MPI_Bcast(&n, 1, MPI_LONG, 0, MPI_COMM_WORLD);
  v.resize(std::size_t(n));
  MPI_Bcast(v.data(), int(n), MPI_DOUBLE, 0, MPI_COMM_WORLD);
  std::size_t at = 0;
  const auto next = [&]() { return v.at(at++); };
  history_.assign(std::size_t(next()), {});
  for (auto& s : history_) {
    s.step = long(next());
    s.loss = next(), s.lr = next(), s.grad_norm = next();
    s.skipped = next() != 0;
    s.imbalance = next(), s.dropped = next(), s.aux_loss = next();
    s.expert_load.resize(std::size_t(next()));
    for (auto& load : s.expert_load) load = next();
  }
}

inline Reference Reference::run(const Deck& deck) {
  Reference ref;
  std::string error;
  if (world_rank() == 0) {
    try {
      train::Trainer one(deck, MPI_COMM_SELF);
      one.run();
      ref.history_ = one.record().history;
      ref.checksums_ = train::parameter_checksums(one);
    } catch (const std::exception& e) {
      error = std::string("the single-rank reference failed on rank 0: ") + e.what();
    }
  }
  idle_barrier();  // the other ranks sleep while rank 0 runs
  error = comm::bcast_string(MPI_COMM_WORLD, error, 0);
  if (!error.empty()) throw std::runtime_error(error);
  ref.broadcast_history();
  ref.checksums_ = broadcast_state({{"model", ref.checksums_}}, 0)["model"];
  return ref;
}

}  // namespace mini5d::test
