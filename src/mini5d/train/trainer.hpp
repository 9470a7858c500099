// SPDX-License-Identifier: BSD-3-Clause
// The training loop on one rank: sample the step's sequences, run forward and
// backward over the accumulation micro-batches, clip by the global gradient norm,
// apply the scheduled learning rate with AdamW. It records per-step statistics and
// per-phase timings for the progress lines and the JSON report.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mini5d/core/deck.hpp"
#include "mini5d/data/source.hpp"
#include "mini5d/model/gpt.hpp"
#include "mini5d/optim/adamw.hpp"

namespace mini5d::train {

struct StepStats {
  long step = 0;          // 1-based
  double loss = 0;        // mean token loss of the step
  double lr = 0;
  double grad_norm = 0;   // before clipping
  double seconds = 0;
  double tokens_per_s = 0;
  double flops_per_s = 0;  // model FLOP/s (see model_flops_per_token)
};

struct PhaseTimes {
  double data = 0, forward = 0, backward = 0, optimizer = 0;
};

// Model FLOPs per trained token: 6 * N (N = parameters in matrix products) for the
// matrix products forward and backward, plus 12 * layers * d_model * seq for the
// attention scores and their weighted sums.
double model_flops_per_token(const ModelConfig& m, std::int64_t matmul_params);

class Trainer {
 public:
  explicit Trainer(const Deck& deck);
  // Runs deck.train.steps steps; calls on_step after each one.
  void run(const std::function<void(const StepStats&)>& on_step = {});

  const Deck& deck() const { return deck_; }
  const data::Source& source() const { return *source_; }
  const model::Gpt<float>& model() const { return *model_; }
  const std::vector<StepStats>& history() const { return history_; }
  const PhaseTimes& phases() const { return phases_; }
  double total_seconds() const { return total_seconds_; }
  std::int64_t tokens_per_step() const;
  double flops_per_token() const { return flops_per_token_; }

 private:
  StepStats step(long s);
  Deck deck_;
  std::unique_ptr<data::Source> source_;
  std::unique_ptr<model::Gpt<float>> model_;
  std::unique_ptr<optim::AdamW<float>> adamw_;
  std::vector<StepStats> history_;
  PhaseTimes phases_;
  double total_seconds_ = 0;
  double flops_per_token_ = 0;
  std::vector<int> inputs_, targets_;
  // Token staging for one micro-batch, allocated once: host side and device side.
  Kokkos::View<int*, Kokkos::LayoutRight, Kokkos::HostSpace> h_in_, h_tg_;
  Vec<int> d_in_, d_tg_;
};

}  // namespace mini5d::train
