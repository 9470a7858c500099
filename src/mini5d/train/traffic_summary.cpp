// SPDX-License-Identifier: BSD-3-Clause
// Bytes per step per axis: the planner's prediction for this rank's stage
// (plan/cost/axis_traffic.hpp) beside what the communication accounts measured during the
// last run(), gathered over every rank at its end.
#include <cmath>

#include "mini5d/comm/accounts.hpp"
#include "mini5d/plan/cost/axis_traffic.hpp"
#include "mini5d/train/deck_plan.hpp"
#include "mini5d/train/trainer.hpp"

namespace mini5d::train {

namespace {
using comm::Traffic;
// The payload bytes the accounts hold now, per summary axis (scalars left out).
std::vector<double> measured_now() {
  const auto& a = comm::accounts();
  return {a.bytes("tp", Traffic::activations) + a.bytes("tp", Traffic::grads),
          a.bytes("cp", Traffic::activations),
          a.bytes("ep", Traffic::activations),
          a.bytes("pp", Traffic::activations) + a.bytes("pp", Traffic::grads),
          a.bytes("dp", Traffic::grads) + a.bytes("dp", Traffic::weights),
          a.bytes("dp_expert", Traffic::grads) + a.bytes("dp_expert", Traffic::weights)};
}
const char* const kAxes[] = {"t", "c", "e", "p", "d", "d (experts)"};

// |measured - predicted| / predicted, 0 when both are 0; +inf when there is no
// prediction but bytes moved, or when either figure is not finite (a NaN compares false
// with everything, so std::max(worst, NaN) would keep the old worst and hide it).
double relative_difference(double predicted, double measured) {
  const double d = predicted > 0 ? std::abs(measured - predicted) / predicted : (measured == 0 ? 0.0 : HUGE_VAL);
  return std::isfinite(d) && std::isfinite(predicted) && std::isfinite(measured) ? d : HUGE_VAL;
}
}  // namespace

std::vector<double> Trainer::traffic_snapshot() const { return measured_now(); }

void Trainer::summarise_traffic(const std::vector<double>& before, long steps) {
  record_.traffic.clear();
  if (steps <= 0) return;
  const auto now = measured_now();
  const double dense = double(base_->layout().total() - base_->layout().expert_total());
  const double experts = double(base_->layout().expert_total());
  const auto want = plan::step_traffic(plan_model(deck_), layout_, grid_->coord(grid::Axis::p),
                                       deck_.model.moe_every, dense, experts,
                                       deck_.train.precision == Precision::bf16 ? 2.0 : 4.0, comms_->dp().rank(),
                                       settings_.bf16_grad_reduce ? 2.0 : 4.0);
  const double predicted[] = {want.tp(), want.cp_activations, want.ep_activations,
                              want.pp(), want.dp(), want.dp_expert()};
  const int A = int(now.size()), R = grid_->size();
  // [predicted, measured] per axis, every rank.
  std::vector<double> mine(2 * std::size_t(A)), all(mine.size() * std::size_t(R));
  for (int i = 0; i < A; ++i) {
    mine[2 * i] = predicted[i];
    mine[2 * i + 1] = (now[std::size_t(i)] - before.at(std::size_t(i))) / double(steps);
  }
  comms_->world().allgather_host(mine.data(), int(mine.size()), all.data());
  for (int i = 0; i < A; ++i) {
    AxisTrafficSummary s;
    s.axis = kAxes[i];
    s.predicted = mine[2 * i];
    s.measured = mine[2 * i + 1];
    for (int r = 0; r < R; ++r) {
      const double p = all[std::size_t(r) * mine.size() + 2 * i], m = all[std::size_t(r) * mine.size() + 2 * i + 1];
      s.mean_predicted += p / R;
      s.mean_measured += m / R;
      const double d = relative_difference(p, m);
      s.worst = d > s.worst ? d : s.worst;  // d is a number (+inf at worst)
    }
    record_.traffic.push_back(s);
  }
}

}  // namespace mini5d::train
