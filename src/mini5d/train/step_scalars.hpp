// SPDX-License-Identifier: BSD-3-Clause
// The scalars a step ends with, reduced in one all-reduce (a sum) over every rank of
// the job instead of one blocking call per figure and group: the summed token loss,
// the squared global gradient norm, how many ranks saw a non-finite value, how many
// received each stop signal, and the mixture-of-experts statistics. Each rank adds only what it owns (a value that
// several ranks hold is added by one of them: see ZeroOptimizer::norm_share), so each
// sum is the global figure.
#pragma once
#include <cstddef>
#include <vector>

namespace mini5d::train {

struct StepScalars {
  double loss = 0;          // summed token loss of the global batch
  double norm_squares = 0;  // squared global gradient norm, before clipping
  double nonfinite = 0;     // ranks whose own loss or gradients were NaN or infinite
  double sigterm = 0, sigusr1 = 0;  // ranks that had received SIGTERM, SIGUSR1 (train/stop_signal)
  // Mixture of experts (empty without): rows each expert computed, summed over MoE
  // layers and micro-batches; assignments dropped in capacity mode; load-balancing loss.
  std::vector<double> expert_load;
  double dropped = 0, aux = 0;

  std::vector<double> pack() const {
    std::vector<double> v{loss, norm_squares, nonfinite, sigterm, sigusr1, dropped, aux};
    v.insert(v.end(), expert_load.begin(), expert_load.end());
    return v;
  }
  static StepScalars unpack(const std::vector<double>& v) {
    StepScalars s;
    s.loss = v[0];
    s.norm_squares = v[1];
    s.nonfinite = v[2];
    s.sigterm = v[3];
    s.sigusr1 = v[4];
    s.dropped = v[5];
    s.aux = v[6];
    s.expert_load.assign(v.begin() + 7, v.end());
    return s;
  }
};

}  // namespace mini5d::train
