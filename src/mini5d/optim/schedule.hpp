// SPDX-License-Identifier: BSD-3-Clause
// Learning rate: linear warm-up to the peak over `warmup` steps, then cosine decay to
// min_lr at the last step. Step numbers are 0-based.
#pragma once
#include <cmath>

namespace mini5d::optim {

inline double learning_rate(long step, long total_steps, long warmup, double peak, double floor) {
  if (step < warmup) return peak * double(step + 1) / double(warmup);
  const long decay_steps = total_steps - warmup;
  if (decay_steps <= 1) return peak;
  double progress = double(step - warmup) / double(decay_steps - 1);
  if (progress > 1) progress = 1;
  return floor + 0.5 * (peak - floor) * (1.0 + std::cos(3.14159265358979323846 * progress));
}

}  // namespace mini5d::optim
