// SPDX-License-Identifier: BSD-3-Clause
// Synthetic Markov source of a chosen order and sparsity with an exactly known loss
// floor. Each context (the last `order` tokens) has `branching` distinct successors
// with random probabilities, all drawn from the data seed. Sequences start from the
// stationary distribution of contexts, so the best possible predictor has, for every
// target position, a conditional entropy we can compute: the floor printed at start-up
// is the mean of those over the sequence, and for position >= order it is the entropy
// rate sum_ctx pi(ctx) H(next | ctx).
#pragma once
#include <string>
#include <vector>

#include "mini5d/data/source.hpp"

namespace mini5d::data {

class MarkovSource : public Source {
 public:
  MarkovSource(int vocab, int order, int branching, std::uint64_t seed, const BuildHooks& hooks = {});
  // Host bytes the constructor holds at its peak for such a table (the table, the
  // stationary distribution and the power iteration's second vector), computed without
  // building it: the up-front memory check counts it. In double: vocab^order can be large.
  static double table_bytes(int vocab, int order, int branching);
  // An explicit transition table (for hand-computed tests): per context (its tokens
  // as base-vocab digits, the first most significant), `branching` successors and
  // their probabilities (summing to 1, zeros allowed). `seed` drives the sampling.
  MarkovSource(int vocab, int order, int branching, const std::vector<int>& successors,
               const std::vector<double>& probabilities, std::uint64_t seed);
  void sequence(std::uint64_t step, std::uint64_t index, int length, int* out) const override;
  std::string describe() const override;
  std::optional<double> loss_floor(int seq) const override;
  int vocab() const override { return vocab_; }
  std::int64_t memory_bytes() const override {
    return std::int64_t(succ_.size() * sizeof(int) +
                        (cdf_.size() + pi_.size() + pi_cdf_.size() + prefix_cond_entropy_.size()) * sizeof(double));
  }
  double entropy_rate() const { return entropy_rate_; }

 private:
  void derive(const BuildHooks& hooks);  // stationary distribution, entropy rate and prefix entropies
  int next(std::int64_t ctx, double u) const;
  std::int64_t first_context(double u) const;
  int vocab_, order_, branching_;
  std::uint64_t seed_;
  std::int64_t contexts_;
  std::vector<int> succ_;          // [contexts, branching] successor tokens
  std::vector<double> cdf_;        // [contexts, branching] cumulative probabilities
  std::vector<double> pi_;         // stationary distribution over contexts
  std::vector<double> pi_cdf_;
  double entropy_rate_ = 0;
  std::vector<double> prefix_cond_entropy_;  // H(x_j | x_<j) for j < order
};

}  // namespace mini5d::data
