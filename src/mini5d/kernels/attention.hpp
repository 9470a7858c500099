// SPDX-License-Identifier: BSD-3-Clause
// Causal multi-head self-attention on a fused QKV activation.
//
// qkv is [B*T, 3*D] (Q | K | V, head h in columns h*hd .. h*hd+hd of each third).
// The forward permutes it to contiguous [B*H, T, hd] tensors so that each (batch,
// head) is a plain row-major matrix for KokkosBlas::gemm, computes the scores
// S = Q K^T / sqrt(hd), applies the causal mask and a row softmax (P, kept for the
// backward), and Y = P V, which is permuted back to [B*T, D].
// The masked entries of P are stored as exact zeros, so the backward needs no mask:
// dS = P * (dP - rowsum(dP * P)) is zero there.
#pragma once
#include <KokkosBlas3_gemm.hpp>

#include "mini5d/kernels/math.hpp"
#include "mini5d/kernels/views.hpp"

namespace mini5d::kernels {

struct AttentionShape {
  int batch, seq, heads, head_dim;
  int d_model() const { return heads * head_dim; }
};

// Views for one (batch, head) matrix of a [B*H, T, x] tensor.
template <class V>
auto head_matrix(const V& v, int bh) {
  return Kokkos::subview(v, bh, Kokkos::ALL(), Kokkos::ALL());
}

// qkv [B*T, 3D] -> q, k, v [B*H, T, hd]
template <class S>
void attention_split_heads(Ten3U<S> q, Ten3U<S> k, Ten3U<S> v, CMatU<S> qkv, AttentionShape s) {
  const int T = s.seq, H = s.heads, hd = s.head_dim, D = s.d_model();
  Kokkos::parallel_for(
      "mini5d::kernels::attention_split_heads", Range(0, s.batch * T), KOKKOS_LAMBDA(const int r) {
        const int b = r / T, t = r % T;
        for (int h = 0; h < H; ++h)
          for (int i = 0; i < hd; ++i) {
            q(b * H + h, t, i) = qkv(r, h * hd + i);
            k(b * H + h, t, i) = qkv(r, D + h * hd + i);
            v(b * H + h, t, i) = qkv(r, 2 * D + h * hd + i);
          }
      });
}

// Inverse of split_heads for gradients: dq, dk, dv [B*H, T, hd] -> dqkv [B*T, 3D].
template <class S>
void attention_merge_heads_qkv(MatU<S> dqkv, CTen3U<S> dq, CTen3U<S> dk, CTen3U<S> dv,
                               AttentionShape s) {
  const int T = s.seq, H = s.heads, hd = s.head_dim, D = s.d_model();
  Kokkos::parallel_for(
      "mini5d::kernels::attention_merge_heads_qkv", Range(0, s.batch * T), KOKKOS_LAMBDA(const int r) {
        const int b = r / T, t = r % T;
        for (int h = 0; h < H; ++h)
          for (int i = 0; i < hd; ++i) {
            dqkv(r, h * hd + i) = dq(b * H + h, t, i);
            dqkv(r, D + h * hd + i) = dk(b * H + h, t, i);
            dqkv(r, 2 * D + h * hd + i) = dv(b * H + h, t, i);
          }
      });
}

// y [B*H, T, hd] -> out [B*T, D]
template <class S>
void attention_merge_heads(MatU<S> out, CTen3U<S> y, AttentionShape s) {
  const int T = s.seq, H = s.heads, hd = s.head_dim;
  Kokkos::parallel_for(
      "mini5d::kernels::attention_merge_heads", Range(0, s.batch * T), KOKKOS_LAMBDA(const int r) {
        const int b = r / T, t = r % T;
        for (int h = 0; h < H; ++h)
          for (int i = 0; i < hd; ++i) out(r, h * hd + i) = y(b * H + h, t, i);
      });
}

// dout [B*T, D] -> dy [B*H, T, hd]
template <class S>
void attention_split_heads_grad(Ten3U<S> dy, CMatU<S> dout, AttentionShape s) {
  const int T = s.seq, H = s.heads, hd = s.head_dim;
  Kokkos::parallel_for(
      "mini5d::kernels::attention_split_heads_grad", Range(0, s.batch * T), KOKKOS_LAMBDA(const int r) {
        const int b = r / T, t = r % T;
        for (int h = 0; h < H; ++h)
          for (int i = 0; i < hd; ++i) dy(b * H + h, t, i) = dout(r, h * hd + i);
      });
}

// In place on P [B*H, T, T] holding scores: scale, causal mask, row softmax.
template <class S>
void causal_softmax(Ten3U<S> p, S scale) {
  const int T = int(p.extent(1));
  Kokkos::parallel_for(
      "mini5d::kernels::causal_softmax", Range2({0, 0}, {int(p.extent(0)), T}),
      KOKKOS_LAMBDA(const int bh, const int t) {
        S mx = p(bh, t, 0) * scale;
        for (int j = 1; j <= t; ++j) mx = p(bh, t, j) * scale > mx ? p(bh, t, j) * scale : mx;
        S sum = 0;
        for (int j = 0; j <= t; ++j) {
          const S e = kmath::exp_fast(p(bh, t, j) * scale - mx);
          p(bh, t, j) = e;
          sum += e;
        }
        const S inv = S(1) / sum;
        for (int j = 0; j <= t; ++j) p(bh, t, j) *= inv;
        for (int j = t + 1; j < T; ++j) p(bh, t, j) = S(0);
      });
}

// In place on dP [B*H, T, T]: dS = P * (dP - rowsum(dP * P)) * scale.
template <class S>
void causal_softmax_backward(Ten3U<S> dp, CTen3U<S> p, S scale) {
  const int T = int(p.extent(1));
  Kokkos::parallel_for(
      "mini5d::kernels::causal_softmax_backward", Range2({0, 0}, {int(p.extent(0)), T}),
      KOKKOS_LAMBDA(const int bh, const int t) {
        S dot = 0;
        for (int j = 0; j <= t; ++j) dot += dp(bh, t, j) * p(bh, t, j);
        for (int j = 0; j <= t; ++j) dp(bh, t, j) = p(bh, t, j) * (dp(bh, t, j) - dot) * scale;
        for (int j = t + 1; j < T; ++j) dp(bh, t, j) = S(0);
      });
}

// Forward core on permuted heads: p = softmax(mask(q k^T * scale)), y = p v.
template <class S>
void attention_forward(Ten3U<S> y, Ten3U<S> p, CTen3U<S> q, CTen3U<S> k, CTen3U<S> v) {
  const int BH = int(q.extent(0));
  const S scale = S(1) / kmath::sqrt(S(q.extent(2)));
  for (int bh = 0; bh < BH; ++bh)
    KokkosBlas::gemm("N", "T", S(1), head_matrix(q, bh), head_matrix(k, bh), S(0), head_matrix(p, bh));
  causal_softmax(p, scale);
  for (int bh = 0; bh < BH; ++bh)
    KokkosBlas::gemm("N", "N", S(1), head_matrix(p, bh), head_matrix(v, bh), S(0), head_matrix(y, bh));
}

// Backward core: from dy, produce dq, dk, dv (overwritten). dp is a [B*H, T, T]
// workspace.
template <class S>
void attention_backward(Ten3U<S> dq, Ten3U<S> dk, Ten3U<S> dv, Ten3U<S> dp, CTen3U<S> dy,
                        CTen3U<S> p, CTen3U<S> q, CTen3U<S> k, CTen3U<S> v) {
  const int BH = int(q.extent(0));
  const S scale = S(1) / kmath::sqrt(S(q.extent(2)));
  for (int bh = 0; bh < BH; ++bh) {
    KokkosBlas::gemm("N", "T", S(1), head_matrix(dy, bh), head_matrix(v, bh), S(0), head_matrix(dp, bh));
    KokkosBlas::gemm("T", "N", S(1), head_matrix(p, bh), head_matrix(dy, bh), S(0), head_matrix(dv, bh));
  }
  causal_softmax_backward(dp, p, scale);
  for (int bh = 0; bh < BH; ++bh) {
    KokkosBlas::gemm("N", "N", S(1), head_matrix(dp, bh), head_matrix(k, bh), S(0), head_matrix(dq, bh));
    KokkosBlas::gemm("T", "N", S(1), head_matrix(dp, bh), head_matrix(q, bh), S(0), head_matrix(dk, bh));
  }
}

}  // namespace mini5d::kernels
