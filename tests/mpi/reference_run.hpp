// SPDX-License-Identifier: BSD-3-Clause
// The invariance oracle's single-rank reference (invariance.hpp), run once per test
// world and shared. Each rank used to run its own copy on MPI_COMM_SELF: the same run
// world-size times over, which on the CI's 2 cores a 32-rank test paid 32 times per case.
// World rank 0 now runs the deck while the other ranks sleep (idle_barrier), then
// broadcasts what the oracle and the tests read of it: each step's statistics and the
// parameters' checksums. The figures are rank 0's run's, bit for bit, on every rank.
// A reference that fails on rank 0 (a deck it refuses) fails on every rank with rank 0's
// reason, so no rank is left waiting.
#pragma once
#include <mpi.h>

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "mini5d/core/deck.hpp"
#include "mini5d/train/param_checksum.hpp"
#include "mini5d/train/trainer.hpp"
#include "mpi_util.hpp"

namespace mini5d::test {

// What a test reads of the single-rank run: the step statistics the oracle and the axis
// tests compare (loss, gradient norm, learning rate, the experts' loads and aux loss),
// and the parameter checksums after the last step.
class Reference {
 public:
  const std::vector<train::StepStats>& history() const { return history_; }
  const std::map<std::string, train::TensorChecksum>& checksums() const { return checksums_; }

  // Runs `deck` on one rank: collective over MPI_COMM_WORLD.
  static Reference run(const Deck& deck);

 private:
  std::vector<train::StepStats> history_;
  std::map<std::string, train::TensorChecksum> checksums_;

  std::vector<double> pack() const;
  void unpack(const std::vector<double>& numbers, const std::string& names);
};

namespace detail {
// Broadcasts a vector of T from world rank 0 (its size first).
template <typename T>
void broadcast(std::vector<T>& v, MPI_Datatype type) {
  std::int64_t n = static_cast<std::int64_t>(v.size());
  MPI_Bcast(&n, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
  v.resize(static_cast<std::size_t>(n));
  if (n > 0) MPI_Bcast(v.data(), static_cast<int>(n), type, 0, MPI_COMM_WORLD);
}
}  // namespace detail

// Per step: step, loss, lr, grad_norm, skipped, imbalance, dropped, aux_loss, the number
// of expert loads, the loads. Per tensor (in name order): elements, sum, sum_sq, weighted.
inline std::vector<double> Reference::pack() const {
  std::vector<double> out = {double(history_.size())};
  for (const auto& s : history_) {
    out.insert(out.end(), {double(s.step), s.loss, s.lr, s.grad_norm, s.skipped ? 1.0 : 0.0, s.imbalance, s.dropped,
                           s.aux_loss, double(s.expert_load.size())});
    out.insert(out.end(), s.expert_load.begin(), s.expert_load.end());
  }
  for (const auto& [name, c] : checksums_) out.insert(out.end(), {double(c.elements), c.sum, c.sum_sq, c.weighted});
  return out;
}

inline void Reference::unpack(const std::vector<double>& numbers, const std::string& names) {
  std::size_t at = 0;
  const auto next = [&]() { return numbers.at(at++); };
  history_.resize(static_cast<std::size_t>(next()));
  for (auto& s : history_) {
    s.step = static_cast<long>(next());
    s.loss = next(), s.lr = next(), s.grad_norm = next();
    s.skipped = next() != 0;
    s.imbalance = next(), s.dropped = next(), s.aux_loss = next();
    s.expert_load.resize(static_cast<std::size_t>(next()));
    for (auto& load : s.expert_load) load = next();
  }
  checksums_.clear();
  for (std::size_t begin = 0; begin < names.size();) {
    const std::size_t end = names.find('\n', begin);
    train::TensorChecksum c;
    c.elements = static_cast<std::int64_t>(next());
    c.sum = next(), c.sum_sq = next(), c.weighted = next();
    checksums_.emplace(names.substr(begin, end - begin), c);
    begin = end + 1;
  }
  if (at != numbers.size())
    throw std::logic_error("Reference::unpack: " + std::to_string(numbers.size() - at) + " numbers left over");
}

inline Reference Reference::run(const Deck& deck) {
  Reference ref;
  std::vector<double> numbers;
  std::vector<char> names, error;
  if (world_rank() == 0) {
    try {
      train::Trainer one(deck, MPI_COMM_SELF);
      one.run();
      ref.history_ = one.history();
      ref.checksums_ = train::parameter_checksums(one);
      numbers = ref.pack();
      for (const auto& [name, c] : ref.checksums_) {
        names.insert(names.end(), name.begin(), name.end());
        names.push_back('\n');  // tensor names are identifiers with dots: no newline
      }
    } catch (const std::exception& e) {
      const std::string what = e.what();
      error.assign(what.begin(), what.end());
      if (error.empty()) error.push_back('?');
    }
  }
  idle_barrier();  // the other ranks sleep while rank 0 runs
  detail::broadcast(error, MPI_CHAR);
  if (!error.empty())
    throw std::runtime_error("the single-rank reference failed on rank 0: " + std::string(error.begin(), error.end()));
  detail::broadcast(numbers, MPI_DOUBLE);
  detail::broadcast(names, MPI_CHAR);
  if (world_rank() != 0) ref.unpack(numbers, std::string(names.begin(), names.end()));
  return ref;
}

}  // namespace mini5d::test
