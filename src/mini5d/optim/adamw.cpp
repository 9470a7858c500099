// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/optim/adamw.hpp"

#include <cmath>

#include "mini5d/kernels/math.hpp"

namespace mini5d::optim {

template <class S>
AdamW<S>::AdamW(std::int64_t n, std::vector<Segment> segments, AdamWConfig cfg)
    : m("mini5d::optim::exp_avg", n), v("mini5d::optim::exp_avg_sq", n),
      segments_(std::move(segments)), cfg_(cfg),
      mem_(mem::Category::optimizer, mem::view_bytes(m) + mem::view_bytes(v)) {}

template <class S>
void AdamW<S>::update(VecU<S> params, VecU<S> grads, double lr, long step) {
  const float b1 = float(cfg_.beta1), b2 = float(cfg_.beta2);
  const double c1 = 1.0 - std::pow(cfg_.beta1, double(step));
  const double c2 = 1.0 - std::pow(cfg_.beta2, double(step));
  // Bias corrections folded into two per-step constants; the per-element work is fp32
  // (double per element made the update a tenth of a small model's step).
  const float step_size = float(lr / c1);
  const float inv_sqrt_c2 = float(1.0 / std::sqrt(c2));
  const float eps = float(cfg_.eps);
  auto mm = m;
  auto vv = v;
  for (const auto& s : segments_) {
    const float decay = float(lr * (s.decay ? cfg_.weight_decay : 0.0));
    const std::int64_t po = s.param_offset, go = s.grad_offset, so = s.state_offset;
    Kokkos::parallel_for(
        "mini5d::optim::adamw", Range(0, s.size), KOKKOS_LAMBDA(const std::int64_t j) {
          const float g = float(grads(go + j));
          const float m1 = b1 * mm(so + j) + (1.0f - b1) * g;
          const float v1 = b2 * vv(so + j) + (1.0f - b2) * g * g;
          mm(so + j) = m1;
          vv(so + j) = v1;
          // p -= lr * (mhat / (sqrt(vhat) + eps) + wd * p), mhat = m / c1, vhat = v / c2
          const S p = params(po + j);
          params(po + j) = p - S(step_size * m1 / (kmath::sqrt(v1) * inv_sqrt_c2 + eps)) - S(decay) * p;
        });
  }
}

template <class S>
double sum_of_squares(VecU<S> g) {
  double s = 0;
  Kokkos::parallel_reduce(
      "mini5d::optim::grad_sumsq", Range(0, g.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t i, double& acc) { acc += double(g(i)) * double(g(i)); }, s);
  return s;
}

template <class S>
double clip_by_global_norm(VecU<S> g, double norm, double max_norm) {
  if (max_norm <= 0 || !(norm > max_norm)) return 1.0;
  const double factor = max_norm / norm;
  const S f = S(factor);
  Kokkos::parallel_for(
      "mini5d::optim::clip", Range(0, g.extent(0)), KOKKOS_LAMBDA(const std::int64_t i) { g(i) *= f; });
  return factor;
}

template class AdamW<float>;
template class AdamW<double>;
template double sum_of_squares<float>(VecU<float>);
template double sum_of_squares<double>(VecU<double>);
template double clip_by_global_norm<float>(VecU<float>, double, double);
template double clip_by_global_norm<double>(VecU<double>, double, double);

}  // namespace mini5d::optim
