// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/train/step_guard.hpp"

#include <cmath>
#include <cstdio>

namespace mini5d::train {

namespace {
std::string num(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}
}  // namespace

StepGuard::Verdict StepGuard::judge(bool nonfinite, double loss, double grad_norm) {
  if (nonfinite) {
    ++skipped_;
    ++consecutive_;
    const std::string what = !std::isfinite(loss) ? "loss " + num(loss)
                             : !std::isfinite(grad_norm) ? "gradient norm " + num(grad_norm)
                                                         : "loss or gradient norm on another rank";
    if (consecutive_ > max_skipped_) {
      why_ = "non-finite " + what + " in " + std::to_string(consecutive_) +
             " consecutive steps (train.max_skipped=" + std::to_string(max_skipped_) +
             "): the run stops; the last checkpoint holds the last finite state (lower train.lr or train.grad_clip)";
      return Verdict::Stop;
    }
    why_ = "skipped: non-finite " + what + "; parameters and moments unchanged (" +
           std::to_string(consecutive_) + " in a row, the run stops after train.max_skipped=" +
           std::to_string(max_skipped_) + ")";
    return Verdict::Skip;
  }
  if (spike_factor_ > 0 && recent_.size() >= kMinHistory) {
    double mean = 0;
    for (double l : recent_) mean += l;
    mean /= double(recent_.size());
    if (loss > spike_factor_ * mean) {
      why_ = "loss " + num(loss) + " is over train.spike_factor=" + num(spike_factor_) + " x the mean " +
             num(mean) + " of the previous " + std::to_string(recent_.size()) +
             " steps: the run stops (diverging; lower train.lr, or raise train.spike_factor)";
      return Verdict::Stop;
    }
  }
  consecutive_ = 0;
  recent_.push_back(loss);
  if (recent_.size() > kWindow) recent_.pop_front();
  why_.clear();
  return Verdict::Apply;
}

}  // namespace mini5d::train
