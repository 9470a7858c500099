// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/optim/adamw.hpp"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "mini5d/kernels/math.hpp"
#include "mini5d/kernels/profile.hpp"
#include "mini5d/kernels/team_reduce.hpp"

namespace mini5d::optim {

template <class S>
AdamW<S>::AdamW(std::int64_t n, const std::vector<Segment>& segments, AdamWConfig cfg, std::int64_t piece)
    : m("mini5d::optim::exp_avg", n), v("mini5d::optim::exp_avg_sq", n), cfg_(cfg) {
  piece = std::max<std::int64_t>(1, piece);
  std::vector<AdamWPiece> table;
  for (const auto& s : segments)
    for (std::int64_t at = 0; at < s.size; at += piece) {
      const std::int64_t size = std::min(piece, s.size - at);
      table.push_back({s.param_offset + at, s.grad_offset + at, s.state_offset + at, size, s.decay ? 1 : 0});
      longest_ = std::max(longest_, size);
    }
  pieces_ = decltype(pieces_)("mini5d::optim::adamw_pieces", table.size());
  auto h = Kokkos::create_mirror_view(pieces_);
  for (std::size_t i = 0; i < table.size(); ++i) h(i) = table[i];
  Kokkos::deep_copy(pieces_, h);
  // The optimizer state is the moments (the analytic model's 8 bytes per element); the
  // piece table is bookkeeping.
  mem_ = mem::Charge(mem::Category::optimizer, mem::view_bytes(m) + mem::view_bytes(v));
  table_mem_ = mem::Charge(mem::Category::workspace, mem::view_bytes(pieces_));
}

template <class S>
void AdamW<S>::update(VecU<S> params, VecU<S> grads, double lr, long step) {
  if (pieces_.extent(0) == 0) return;
  // Per element: reads p, g, m, v and writes p, m, v (moments fp32).
  const double n = double(m.extent(0));
  prof::Scope ps(prof::Family::optimizer, 12.0 * n, n * (2.0 * sizeof(S) + sizeof(S) + 4.0 * sizeof(float)));
  const float b1 = float(cfg_.beta1), b2 = float(cfg_.beta2);
  const double c1 = 1.0 - std::pow(cfg_.beta1, double(step));
  const double c2 = 1.0 - std::pow(cfg_.beta2, double(step));
  // Bias corrections folded into two per-step constants; the per-element work is fp32
  // (double per element made the update a tenth of a small model's step).
  const float step_size = float(lr / c1);
  const float inv_sqrt_c2 = float(1.0 / std::sqrt(c2));
  const float eps = float(cfg_.eps);
  const float decay_on = float(lr * cfg_.weight_decay);
  auto mm = m;
  auto vv = v;
  auto pieces = pieces_;
  using Policy = Kokkos::TeamPolicy<ExecSpace>;
  // A team per piece; on a host backend a team is one thread and the inner loop is a
  // plain (vectorisable) loop over the piece.
  const int team = std::is_same<ExecSpace, Kokkos::DefaultHostExecutionSpace>::value
                       ? 1
                       : int(std::min<std::int64_t>(longest_, 256));
  Kokkos::parallel_for(
      "mini5d::optim::adamw", Policy(int(pieces.extent(0)), team),
      KOKKOS_LAMBDA(const Policy::member_type& t) {
        const AdamWPiece pc = pieces(t.league_rank());
        const float decay = pc.decay ? decay_on : 0.0f;
        S* p = params.data() + pc.param_offset;
        const S* g = grads.data() + pc.grad_offset;
        float* m1s = mm.data() + pc.state_offset;
        float* v1s = vv.data() + pc.state_offset;
        Kokkos::parallel_for(Kokkos::TeamThreadRange(t, pc.size), [&](const std::int64_t j) {
          const float gj = float(g[j]);
          const float m1 = b1 * m1s[j] + (1.0f - b1) * gj;
          const float v1 = b2 * v1s[j] + (1.0f - b2) * gj * gj;
          m1s[j] = m1;
          v1s[j] = v1;
          // p -= lr * (mhat / (sqrt(vhat) + eps) + wd * p), mhat = m / c1, vhat = v / c2
          const S pj = p[j];
          p[j] = pj - S(step_size * m1 / (kmath::sqrt(v1) * inv_sqrt_c2 + eps)) - S(decay) * pj;
        });
      });
}

template <class S>
double sum_of_squares(VecU<S> g) {
  double s = 0;
  const std::int64_t n = std::int64_t(g.extent(0));
  prof::Scope ps(prof::Family::norm, 2.0 * double(n), double(sizeof(S)) * double(n));
  // A team per block of 4096 elements, its threads over consecutive elements (a
  // vectorised sum of 8 partials on a one-thread host team), blocks added in double.
  constexpr int kBlock = 4096;
  const std::int64_t blocks = (n + kBlock - 1) / kBlock;
  Kokkos::parallel_reduce(
      "mini5d::optim::grad_sumsq", Team(int(blocks), Kokkos::AUTO),
      KOKKOS_LAMBDA(const TeamMember& t, double& acc) {
        const std::int64_t i0 = std::int64_t(t.league_rank()) * kBlock;
        const int len = int(i0 + kBlock < n ? kBlock : n - i0);
        const double part = kernels::team_sum<double>(t, len, [&](const int i) {
          const double v = double(g(i0 + i));
          return v * v;
        });
        Kokkos::single(Kokkos::PerTeam(t), [&]() { acc += part; });
      },
      s);
  return s;
}

template <class S>
double clip_by_global_norm(VecU<S> g, double norm, double max_norm) {
  if (max_norm <= 0 || !(norm > max_norm)) return 1.0;
  const double factor = max_norm / norm;
  const S f = S(factor);
  prof::Scope ps(prof::Family::norm, double(g.extent(0)), 2.0 * double(sizeof(S)) * double(g.extent(0)));
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
