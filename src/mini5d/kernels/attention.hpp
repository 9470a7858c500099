// SPDX-License-Identifier: BSD-3-Clause
// Causal multi-head self-attention on a fused QKV activation.
//
// qkv is [B*T, (H + 2*Hkv)*hd] (Q | K | V: H query heads, Hkv key/value heads each,
// head h in columns h*hd .. h*hd+hd of its part). Grouped-query attention (Hkv < H,
// Ainslie et al. 2023): query head h reads key/value head h / (H/Hkv). With the
// (batch, head) index bh = b*H + h of a query matrix, its key/value matrix is
// bh / (H/Hkv) = b*Hkv + h/(H/Hkv), so the kernels below take k and v as
// [B*Hkv, T, hd] and find the group from the extents; Hkv = H is plain multi-head
// attention, the same products in the same order.
// The forward permutes it to contiguous [B*H, T, hd] tensors so that each (batch,
// head) is a plain row-major matrix for the BLAS, computes the scores
// S = Q K^T / sqrt(hd) (the scale is the product's alpha), applies the causal mask and
// a row softmax (P, kept for the backward), and Y = P V, which is permuted back to
// [B*T, D].
//
// Causal blocks are skipped: the rows are cut into blocks of `block` queries, and query
// block i meets only keys [0, (i+1)*block) - the blocks above the diagonal are neither
// computed nor read (at T = 4 blocks that is 3/8 of the products' work). P is defined
// on the computed blocks only: the softmax stores exact zeros above the diagonal inside
// the diagonal block, so the backward needs no mask: dS = P * (dP - rowsum(dP * P)) is
// zero there. The products read strided blocks of P in place (a LayoutRight view with
// the row stride of P, which Kokkos Kernels passes to the BLAS as its leading
// dimension): nothing is copied. Each kind of product (QK^T, PV, and dP, dV, dQ, dK in
// the backward) over all (batch, head, causal block) is one batched_gemm call: a BLAS
// call per product on a host execution space, one launch of team GEMMs on a device
// (batched_gemm.hpp).
//
// The row kernels take a team per row (row reductions are team reductions, threads on
// consecutive columns); the permutes take a team per token row, a thread per head and
// vector lanes over the head's consecutive elements.
#pragma once
#include "mini5d/kernels/batched_gemm.hpp"
#include "mini5d/kernels/bf16.hpp"
#include "mini5d/kernels/head_views.hpp"
#include "mini5d/kernels/math.hpp"
#include "mini5d/kernels/profile.hpp"
#include "mini5d/kernels/rope.hpp"
#include "mini5d/kernels/team_reduce.hpp"
#include "mini5d/kernels/views.hpp"
#include "mini5d/rules/attention_tiles.hpp"

namespace mini5d::kernels {

constexpr int kAttBlock = rules::kAttentionTile;  // queries per causal block

struct AttentionShape {
  int batch, seq, heads, head_dim;
  int kv_heads = 0;  // key/value heads; 0: heads (multi-head attention)
  KOKKOS_INLINE_FUNCTION int d_model() const { return heads * head_dim; }  // called in device functors
  KOKKOS_INLINE_FUNCTION int kv() const { return kv_heads > 0 ? kv_heads : heads; }
};


// Rows [r0, r0 + n), columns [c0, c1) of (batch, head) bh of P [B*H, T, T]: a
// LayoutRight view whose row stride is T (the BLAS's leading dimension).
template <class S>
KOKKOS_INLINE_FUNCTION MatU<S> prob_block(Ten3U<S> p, int bh, int r0, int n, int c0, int c1) {
  return Kokkos::subview(p, bh, Kokkos::make_pair(r0, r0 + n), Kokkos::make_pair(c0, c1));
}
template <class S>
KOKKOS_INLINE_FUNCTION CMatU<S> prob_block(CTen3U<S> p, int bh, int r0, int n, int c0, int c1) {
  return Kokkos::subview(p, bh, Kokkos::make_pair(r0, r0 + n), Kokkos::make_pair(c0, c1));
}

// One causal block: queries [r0, r0 + n), keys [0, end).
struct CausalBlock {
  int r0, n, end;
};
KOKKOS_INLINE_FUNCTION CausalBlock causal_block(int i, int block, int T) {
  const int r0 = i * block, n = r0 + block < T ? block : T - r0;
  return {r0, n, r0 + n};
}
inline int causal_blocks(int T, int block) { return (T + block - 1) / block; }

// The key columns row t of P is computed over: up to the end of its diagonal block.
KOKKOS_INLINE_FUNCTION int causal_row_end(int t, int T, int block) {
  const int e = (t / block + 1) * block;
  return e < T ? e : T;
}

// Copies between qkv-style rows [B*T, (H + 2*Hkv)*hd] (or [B*T, H*hd] for one tensor)
// and head tensors [B*H, T, hd] (k, v: [B*Hkv, T, hd]): a team per token row, a thread
// per (tensor, head), lanes over the head's elements. to_heads: rows -> heads, else
// heads -> rows.
// With a rotary table (model.positions=rope) the copy of q and k (or dq and dk) also
// turns them: by the token's angles on the way to the heads (the forward), back on the
// way to the rows (the backward's inverse rotation; kernels/rope.hpp's rope_turn). Fused
// here, RoPE costs no pass of its own over q and k: it was four extra passes a block,
// about 1% of llama-small's step on one core.
template <class S>
struct HeadPermute {
  static constexpr int kMax = 3;
  S* heads[kMax];  // q, k, v (or dq, dk, dv; or y alone)
  int n;           // tensors: 1 or 3
  MatU<S> rows;
  AttentionShape s;
  bool to_heads;
  // [T, hd/2] row-major, or nullptr: no rotation. In acc_t<S>: a bf16 q or k is widened,
  // turned in fp32 and rounded once as it is stored.
  const acc_t<S>* rope_cos = nullptr;
  const acc_t<S>* rope_sin = nullptr;
  KOKKOS_INLINE_FUNCTION void operator()(const TeamMember& tm) const {
    const int r = tm.league_rank(), T = s.seq, H = s.heads, Hkv = s.kv(), hd = s.head_dim;
    const int b = r / T, t = r % T;
    team_for(tm, 0, n == 1 ? H : H + 2 * Hkv, [&](const int wh) {
      // Query heads first, then the key heads, then the value heads (the rows' order).
      const int which = wh < H ? 0 : 1 + (wh - H) / Hkv, h = wh < H ? wh : (wh - H) % Hkv;
      const int nh = which == 0 ? H : Hkv;
      S* hp = heads[which] + (std::int64_t(b * nh + h) * T + t) * hd;
      S* rp = &rows(r, (which == 0 ? 0 : H + (which - 1) * Hkv) * hd + h * hd);
      const S* src = to_heads ? rp : hp;
      S* dst = to_heads ? hp : rp;
      if (rope_cos && which < 2) {
        // Forward the token's angles; back (sin negated) on the way to the rows.
        using A = acc_t<S>;
        const A* cs = rope_cos + std::int64_t(t) * (hd / 2);
        const A* sn = rope_sin + std::int64_t(t) * (hd / 2);
        const A sign = to_heads ? A(1) : A(-1);
        Kokkos::parallel_for(Kokkos::ThreadVectorRange(tm, hd / 2), [&](const int i) {
          A y0, y1;
          rope_turn<A>(ld(src[2 * i]), ld(src[2 * i + 1]), cs[i], sign * sn[i], y0, y1);
          dst[2 * i] = st<S>(y0);
          dst[2 * i + 1] = st<S>(y1);
        });
      } else {
        Kokkos::parallel_for(Kokkos::ThreadVectorRange(tm, hd), [&](const int i) { dst[i] = src[i]; });
      }
    });
  }
};

// f turning q and k (or dq and dk) by `rope`'s table; f itself when rope is nullptr.
template <class S>
HeadPermute<S> turned_by(HeadPermute<S> f, const RopeTable<acc_t<S>>* rope) {
  if (rope) f.rope_cos = rope->cos.data(), f.rope_sin = rope->sin.data();
  return f;
}

template <class S>
void permute_heads(const char* name, HeadPermute<S> f) {
  const double elems = double(f.rows.extent(0)) * (f.n == 1 ? f.s.heads : f.s.heads + 2 * f.s.kv()) * f.s.head_dim;
  prof::Scope ps(prof::Family::attention, 0.0, 2.0 * double(sizeof(S)) * elems);
  Kokkos::parallel_for(name, teams(f.rows.extent(0)), f);
}

// qkv [B*T, (H + 2*Hkv)*hd] -> q [B*H, T, hd], k, v [B*Hkv, T, hd]; with `rope`
// (cos and sin [T, hd/2] of the local tokens) q and k turned by their positions.
template <class S>
void attention_split_heads(Ten3U<S> q, Ten3U<S> k, Ten3U<S> v, CMatU<S> qkv, AttentionShape s,
                           const RopeTable<acc_t<S>>* rope = nullptr) {
  // The functor writes through `rows` only when merging; splitting reads it.
  const MatU<S> rows(const_cast<S*>(qkv.data()), qkv.extent(0), qkv.extent(1));
  permute_heads<S>("mini5d::kernels::attention_split_heads",
                   turned_by<S>({{q.data(), k.data(), v.data()}, 3, rows, s, true}, rope));
}

// Inverse of split_heads for gradients: dq, dk, dv -> dqkv [B*T, (H + 2*Hkv)*hd]; with
// `rope`, dq and dk turned back (the rotation's transpose).
template <class S>
void attention_merge_heads_qkv(MatU<S> dqkv, CTen3U<S> dq, CTen3U<S> dk, CTen3U<S> dv, AttentionShape s,
                               const RopeTable<acc_t<S>>* rope = nullptr) {
  permute_heads<S>(
      "mini5d::kernels::attention_merge_heads_qkv",
      turned_by<S>({{const_cast<S*>(dq.data()), const_cast<S*>(dk.data()), const_cast<S*>(dv.data())}, 3, dqkv, s, false},
                   rope));
}

// y [B*H, T, hd] -> out [B*T, D]
template <class S>
void attention_merge_heads(MatU<S> out, CTen3U<S> y, AttentionShape s) {
  permute_heads<S>("mini5d::kernels::attention_merge_heads", {{const_cast<S*>(y.data()), nullptr, nullptr}, 1, out, s,
                                                               false});
}

// dout [B*T, D] -> dy [B*H, T, hd]
template <class S>
void attention_split_heads_grad(Ten3U<S> dy, CMatU<S> dout, AttentionShape s) {
  const MatU<S> rows(const_cast<S*>(dout.data()), dout.extent(0), dout.extent(1));
  permute_heads<S>("mini5d::kernels::attention_split_heads_grad", {{dy.data(), nullptr, nullptr}, 1, rows, s, true});
}

// In place on P [B*H, T, T] holding scaled scores on the causal blocks: mask and row
// softmax; zeros above the diagonal up to the end of the diagonal block.
template <class S>
void causal_softmax(Ten3U<S> p, int block = kAttBlock) {
  const int BH = int(p.extent(0)), T = int(p.extent(1));
  prof::Scope ps(prof::Family::attention, 6.0 * BH * T * (T + 1) / 2.0, 2.0 * double(sizeof(S)) * BH * T * (T + 1) / 2.0);
  Kokkos::parallel_for(
      "mini5d::kernels::causal_softmax", teams(std::int64_t(BH) * T), KOKKOS_LAMBDA(const TeamMember& tm) {
        const int bh = tm.league_rank() / T, t = tm.league_rank() % T, end = causal_row_end(t, T, block);
        const S mx = team_max<S>(tm, t + 1, [&](const int j) { return p(bh, t, j); });
        // Each thread rewrites only the entries it reads.
        const S sum = team_sum<S>(tm, t + 1, [&](const int j) {
          const S e = kmath::exp_fast(p(bh, t, j) - mx);
          p(bh, t, j) = e;
          return e;
        });
        const S inv = S(1) / sum;
        team_for(tm, 0, end, [&](const int j) {
          p(bh, t, j) = j <= t ? p(bh, t, j) * inv : S(0);
        });
      });
}

// In place on dP [B*H, T, T] (causal blocks): dS = P * (dP - rowsum(dP * P)), the
// softmax scale left to the products that consume dS; zeros above the diagonal.
template <class S>
void causal_softmax_backward(Ten3U<S> dp, CTen3U<S> p, int block = kAttBlock) {
  const int BH = int(p.extent(0)), T = int(p.extent(1));
  prof::Scope ps(prof::Family::attention, 4.0 * BH * T * (T + 1) / 2.0, 3.0 * double(sizeof(S)) * BH * T * (T + 1) / 2.0);
  Kokkos::parallel_for(
      "mini5d::kernels::causal_softmax_backward", teams(std::int64_t(BH) * T), KOKKOS_LAMBDA(const TeamMember& tm) {
        const int bh = tm.league_rank() / T, t = tm.league_rank() % T, end = causal_row_end(t, T, block);
        const S dot = team_sum<S>(tm, t + 1, [&](const int j) { return dp(bh, t, j) * p(bh, t, j); });
        team_for(tm, 0, end, [&](const int j) {
          dp(bh, t, j) = j <= t ? p(bh, t, j) * (dp(bh, t, j) - dot) : S(0);
        });
      });
}

// The per-head products: one product per (batch, head, causal block), product index
// i = bh * blocks + block, through batched_gemm (one BLAS call each on a host execution
// space, where each runs at the BLAS's full rate; one launch for all of them on a
// device). Work is counted as done (skipped blocks are not counted).

// FLOPs and bytes of one batched product over the causal blocks and the B*H heads,
// for the profile: dims(c) gives block c's product as {m, n, k}.
struct GemmDims {
  double m, n, k;
};
template <class S, class Dims>
void causal_gemm_work(int T, int block, int BH, double& flops, double& bytes, const Dims& dims) {
  double f = 0, b = 0;
  for (int i = 0; i < causal_blocks(T, block); ++i) {
    const GemmDims d = dims(causal_block(i, block, T));
    prof::gemm_work<S>(d.m, d.n, d.k, false, f, b);
  }
  flops += BH * f;
  bytes += BH * b;
}

// Forward core on permuted heads: p = softmax(mask(q k^T * scale)), y = p v.
template <class S>
void attention_forward(Ten3U<S> y, Ten3U<S> p, CTen3U<S> q, CTen3U<S> k, CTen3U<S> v, int block = kAttBlock) {
  const int BH = int(q.extent(0)), T = int(q.extent(1)), hd = int(q.extent(2)), nb = causal_blocks(T, block);
  const int count = BH * nb, g = kv_group(q, k);
  const S scale = S(1) / kmath::sqrt(S(hd));
  const CTen3U<S> pc = p;
  {
    double flops = 0, bytes = 0;
    causal_gemm_work<S>(T, block, BH, flops, bytes, [&](CausalBlock c) {
      return GemmDims{double(c.n), double(c.end), double(hd)};
    });
    prof::Scope ps(prof::Family::attention_gemm, flops, bytes);
    // S_i = scale Q_i K[0:end]^T
    batched_gemm<S>("mini5d::kernels::attention_scores", Op::N, Op::T, scale, S(0), count, KOKKOS_LAMBDA(const int i) {
      const int bh = i / nb;
      const CausalBlock c = causal_block(i % nb, block, T);
      return GemmOperands<S>{head_rows<S>(q, bh, c.r0, c.n), head_rows<S>(k, bh / g, 0, c.end),
                             prob_block<S>(p, bh, c.r0, c.n, 0, c.end)};
    });
  }
  causal_softmax(p, block);
  {
    double flops = 0, bytes = 0;
    causal_gemm_work<S>(T, block, BH, flops, bytes, [&](CausalBlock c) {
      return GemmDims{double(c.n), double(hd), double(c.end)};
    });
    prof::Scope ps(prof::Family::attention_gemm, flops, bytes);
    // Y_i = P_i V[0:end]
    batched_gemm<S>("mini5d::kernels::attention_values", Op::N, Op::N, S(1), S(0), count, KOKKOS_LAMBDA(const int i) {
      const int bh = i / nb;
      const CausalBlock c = causal_block(i % nb, block, T);
      return GemmOperands<S>{prob_block<S>(pc, bh, c.r0, c.n, 0, c.end), head_rows<S>(v, bh / g, 0, c.end),
                             head_rows<S>(y, bh, c.r0, c.n)};
    });
  }
}

// Backward core: from dy, produce dq, dk, dv (overwritten). dp is a [B*H, T, T]
// workspace. Query block i: dP_i = dY_i V[0:end]^T, dQ_i = scale dS_i K[0:end]. Key
// block j: the queries that see it are rows [j*block, T), so dV_j = P[rows, j]^T dY[rows]
// and dK_j = scale dS[rows, j]^T Q[rows]. With grouped queries a key/value head's dK and
// dV sum over its group's query heads: one batched product per member of the group (the
// first overwrites, the others add), each over distinct outputs, so that no two
// products of one launch write the same block.
template <class S>
void attention_backward(Ten3U<S> dq, Ten3U<S> dk, Ten3U<S> dv, Ten3U<S> dp, CTen3U<S> dy,
                        CTen3U<S> p, CTen3U<S> q, CTen3U<S> k, CTen3U<S> v, int block = kAttBlock) {
  const int BH = int(q.extent(0)), T = int(q.extent(1)), hd = int(q.extent(2)), nb = causal_blocks(T, block);
  const int count = BH * nb, g = kv_group(q, k), kv_count = count / g;
  const S scale = S(1) / kmath::sqrt(S(hd));
  const CTen3U<S> dpc = dp;
  double flops = 0, bytes = 0;  // of the two passes, each
  causal_gemm_work<S>(T, block, BH, flops, bytes, [&](CausalBlock c) {
    return GemmDims{double(c.n), double(c.end), double(hd)};  // dP_i
  });
  causal_gemm_work<S>(T, block, BH, flops, bytes, [&](CausalBlock c) {
    return GemmDims{double(c.n), double(hd), double(T - c.r0)};  // dV_j
  });
  {
    prof::Scope ps(prof::Family::attention_gemm, flops, bytes);
    batched_gemm<S>("mini5d::kernels::attention_dprobs", Op::N, Op::T, S(1), S(0), count, KOKKOS_LAMBDA(const int i) {
      const int bh = i / nb;
      const CausalBlock c = causal_block(i % nb, block, T);
      return GemmOperands<S>{head_rows<S>(dy, bh, c.r0, c.n), head_rows<S>(v, bh / g, 0, c.end),
                             prob_block<S>(dp, bh, c.r0, c.n, 0, c.end)};
    });
    for (int j = 0; j < g; ++j)
      batched_gemm<S>("mini5d::kernels::attention_dvalues", Op::T, Op::N, S(1), S(j == 0 ? 0 : 1), kv_count,
                      KOKKOS_LAMBDA(const int i) {
                        const int kbh = i / nb, bh = kbh * g + j;
                        const CausalBlock c = causal_block(i % nb, block, T);
                        return GemmOperands<S>{prob_block<S>(p, bh, c.r0, T - c.r0, c.r0, c.end),
                                               head_rows<S>(dy, bh, c.r0, T - c.r0), head_rows<S>(dv, kbh, c.r0, c.n)};
                      });
  }
  causal_softmax_backward(dp, p, block);
  {
    prof::Scope ps(prof::Family::attention_gemm, flops, bytes);
    batched_gemm<S>("mini5d::kernels::attention_dqueries", Op::N, Op::N, scale, S(0), count, KOKKOS_LAMBDA(const int i) {
      const int bh = i / nb;
      const CausalBlock c = causal_block(i % nb, block, T);
      return GemmOperands<S>{prob_block<S>(dpc, bh, c.r0, c.n, 0, c.end), head_rows<S>(k, bh / g, 0, c.end),
                             head_rows<S>(dq, bh, c.r0, c.n)};
    });
    for (int j = 0; j < g; ++j)
      batched_gemm<S>("mini5d::kernels::attention_dkeys", Op::T, Op::N, scale, S(j == 0 ? 0 : 1), kv_count,
                      KOKKOS_LAMBDA(const int i) {
                        const int kbh = i / nb, bh = kbh * g + j;
                        const CausalBlock c = causal_block(i % nb, block, T);
                        return GemmOperands<S>{prob_block<S>(dpc, bh, c.r0, T - c.r0, c.r0, c.end),
                                               head_rows<S>(q, bh, c.r0, T - c.r0), head_rows<S>(dk, kbh, c.r0, c.n)};
                      });
  }
}

}  // namespace mini5d::kernels
