// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/optim/adamw.hpp"

#include <algorithm>
#include <cmath>


namespace mini5d::optim {

template <class S>
AdamW<S>::AdamW(std::int64_t n, const std::vector<Segment>& segments, AdamWConfig cfg, std::int64_t piece)
    : m("mini5d::optim::exp_avg", n), v("mini5d::optim::exp_avg_sq", n), cfg_(cfg) {
  piece = std::max<std::int64_t>(1, piece);
  std::vector<kernels::AdamWPiece> table;
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
void AdamW<S>::update(VecU<S> params, VecU<S> grads, double lr, long step, double grad_factor) {
  const double c1 = 1.0 - std::pow(cfg_.beta1, double(step));
  const double c2 = 1.0 - std::pow(cfg_.beta2, double(step));
  const kernels::AdamWStep k{float(cfg_.beta1), float(cfg_.beta2), float(lr / c1), float(1.0 / std::sqrt(c2)),
                             float(cfg_.eps),   float(lr * cfg_.weight_decay), grad_factor};
  kernels::adamw_update<S>(pieces_, longest_, params, grads, m, v, k);
}

template class AdamW<float>;
template class AdamW<double>;

}  // namespace mini5d::optim
