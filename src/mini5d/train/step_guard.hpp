// SPDX-License-Identifier: BSD-3-Clause
// What the trainer does with a step whose loss and gradient norm every rank agrees
// on (docs/parallelism.md): a step with a non-finite loss or gradient norm is
// skipped (parameters and moments untouched); after train.max_skipped consecutive
// skips, or a loss over train.spike_factor x the mean of the recent losses, the run
// stops, so a diverged state never becomes a checkpoint. Pure bookkeeping, no MPI: the
// caller agrees the non-finite flag over every rank first.
#pragma once
#include <cstdint>
#include <deque>
#include <string>

#include "mini5d/kernels/views.hpp"

namespace mini5d::train {

class StepGuard {
 public:
  enum class Verdict { Apply, Skip, Stop };
  // Losses of the last kWindow applied steps make the running mean; spikes are
  // judged once kMinHistory of them are known.
  static constexpr std::size_t kWindow = 20, kMinHistory = 5;

  StepGuard(long max_skipped, double spike_factor) : max_skipped_(max_skipped), spike_factor_(spike_factor) {}
  // `nonfinite`: some rank saw a non-finite loss or gradient norm.
  Verdict judge(bool nonfinite, double loss, double grad_norm);
  // Why the last step was skipped or the run stopped (one line, without the step).
  const std::string& why() const { return why_; }
  long skipped() const { return skipped_; }          // steps skipped in total
  long consecutive() const { return consecutive_; }  // skipped in a row, up to now

 private:
  long max_skipped_;
  double spike_factor_;
  long skipped_ = 0, consecutive_ = 0;
  std::deque<double> recent_;
  std::string why_;
};

}  // namespace mini5d::train
