// SPDX-License-Identifier: BSD-3-Clause
// Rotary position embedding (RoPE, Su et al. 2021) of the attention's q and k. Each
// head's vector is cut into head_dim/2 adjacent pairs (2i, 2i+1) (the paper's and
// Meta Llama's pairing, not the half-split one), and pair i of the token at global
// position p is turned by the angle p * theta^(-2i/head_dim):
//   y[2i]   = x[2i] cos - x[2i+1] sin
//   y[2i+1] = x[2i] sin + x[2i+1] cos
// so q.k of two tokens depends only on the difference of their positions. A rotation's
// transpose is its inverse: the backward turns dq, dk back by the same angles.
// The angles depend only on the rank's positions (global ones: with context parallelism
// a zig-zag chunk is turned as where it lies in the sequence, kernels/positions.hpp) and
// the head width, so the table is built once per shape, on the device, in double, and
// every layer and step reads it.
#pragma once
#include <cstdint>

#include "mini5d/kernels/math.hpp"
#include "mini5d/kernels/positions.hpp"
#include "mini5d/kernels/team_reduce.hpp"
#include "mini5d/kernels/views.hpp"

namespace mini5d::kernels {

// cos and sin of every (local token, pair) angle: [local tokens, head_dim/2] each.
template <class S>
struct RopeTable {
  Mat<S> cos, sin;
};

// Fills tab (allocated [pos.local_seq, head_dim/2]) for the global positions pos.
template <class S>
void rope_table(const RopeTable<S>& tab, Positions pos, int head_dim, double theta) {
  const Mat<S> cs = tab.cos, sn = tab.sin;
  const int half = int(cs.extent(1));
  const double log_theta = kmath::log(theta), hd = double(head_dim);
  Kokkos::parallel_for(
      "mini5d::kernels::rope_table", Range(0, std::int64_t(cs.extent(0)) * half), KOKKOS_LAMBDA(const std::int64_t n) {
        const int t = int(n / half), i = int(n % half);
        const double angle = double(pos.global(t)) * kmath::exp(-2.0 * i / hd * log_theta);
        cs(t, i) = S(kmath::cos(angle));
        sn(t, i) = S(kmath::sin(angle));
      });
}

// One pair turned by the angle whose cos and sin are c and s (the inverse: pass -s).
// The one place the rotation is written: rope_rotate and the model's fused head split
// (kernels/attention.hpp's HeadPermute) both call it.
template <class S>
KOKKOS_INLINE_FUNCTION void rope_turn(S a, S b, S c, S s, S& y0, S& y1) {
  y0 = a * c - b * s;
  y1 = a * s + b * c;
}

// x [rows, T, head_dim] (every (batch, head) matrix, T local tokens), in place: turned
// by the table's angles, or back (inverse: the backward, dL/dx from dL/dy). A team per
// (row, token), lanes over its pairs. The model does not call this: it turns q and k
// as it splits the heads (kernels/attention.hpp's HeadPermute), and the tests check
// that fused copy against this reference.
template <class S>
void rope_rotate(const char* label, Ten3U<S> x, CMatU<S> cs, CMatU<S> sn, bool inverse) {
  const int T = int(x.extent(1)), half = int(cs.extent(1));
  const S sign = inverse ? S(-1) : S(1);
  Kokkos::parallel_for(label, teams(std::int64_t(x.extent(0)) * T), KOKKOS_LAMBDA(const TeamMember& tm) {
    const int r = tm.league_rank() / T, t = tm.league_rank() % T;
    team_for(tm, 0, half, [&](const int i) {
      rope_turn<S>(x(r, t, 2 * i), x(r, t, 2 * i + 1), cs(t, i), sign * sn(t, i), x(r, t, 2 * i), x(r, t, 2 * i + 1));
    });
  });
}

template <class S>
void rope_forward(Ten3U<S> x, const RopeTable<S>& tab) {
  rope_rotate<S>("mini5d::kernels::rope_forward", x, tab.cos, tab.sin, false);
}
template <class S>
void rope_backward(Ten3U<S> dx, const RopeTable<S>& tab) {
  rope_rotate<S>("mini5d::kernels::rope_backward", dx, tab.cos, tab.sin, true);
}

}  // namespace mini5d::kernels
