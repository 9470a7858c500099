// SPDX-License-Identifier: BSD-3-Clause
// GEMM shapes of mini5d's block (see compute_model.hpp). With N = B*T/c local tokens,
// width D, MLP width F, h heads of dh = D/h, tensor degree t:
//   QKV        N x D   . D x (D+2Dkv)/t    projection  N x D/t . D/t x D
//   (Dkv = kv_heads * dh: grouped-query attention's narrower keys and values; with
//   t > kv_heads a rank holds one key/value head, 2 dh columns instead of 2Dkv/t)
//   fc         N x D   . D x F/t           proj        N x F/t . F/t x D
//   (SwiGLU: fc is the gate and up, N x D . D x 2F/t; proj is the down projection)
//   scores     (B h/t) x [T/c x dh . dh x T]   PV  (B h/t) x [T/c x T . T x dh]
// (at c = 1 with causal blocks of b queries: block i's b queries against keys
// [0, (i+1) b) only, forward and backward).
// MoE: router N x D . D x E, and E/(e t) whole experts per rank, each taking
// N k imb / (t E/(e t)) of the rank's dispatched tokens.
#include "mini5d/plan/cost/compute_model.hpp"

#include <algorithm>
#include <cmath>

namespace mini5d::plan {

namespace {

// A linear layer y[rows x out] = x[rows x in] W^T, `count` of them: its forward, or
// its two backward products (dx = dy W, dW += dy^T x).
void add_linear(std::vector<GemmCall>& into, bool backward, double rows, double out, double in,
                double count = 1) {
  if (!backward) {
    into.push_back({'N', 'T', rows, out, in, count});
    return;
  }
  into.push_back({'N', 'N', rows, in, out, count});
  into.push_back({'T', 'N', out, in, rows, count});
}

// Distance between two shapes in log2 space, op mismatch counted as far.
double shape_distance(const GemmPoint& p, const GemmCall& c) {
  const double dm = std::log2(c.m / p.m), dn = std::log2(c.n / p.n), dk = std::log2(c.k / p.k);
  const double op = (p.ta == c.ta && p.tb == c.tb) ? 0.0 : 1.0;
  return std::sqrt(dm * dm + dn * dn + dk * dk + op);
}

// Seconds of one call from the measured table (see compute_model.hpp).
double measured_call_time(const DeviceDesc& dev, Precision prec, GemmCall one) {
  one.count = 1;
  const double roof = roofline_gemm_time(dev, prec, one);
  // The nearest few points, weighted by 1/distance^4: exact at a measured shape.
  constexpr int kNear = 4;
  std::vector<std::pair<double, const GemmPoint*>> near;
  near.reserve(dev.gemm_table.size());
  for (const GemmPoint& p : dev.gemm_table) near.emplace_back(shape_distance(p, one), &p);
  const std::size_t keep = std::min<std::size_t>(kNear, near.size());
  std::partial_sort(near.begin(), near.begin() + std::ptrdiff_t(keep), near.end(),
                    [](const auto& a, const auto& b) { return a.first < b.first; });
  if (near[0].first < 1e-9) return near[0].second->seconds;
  double wsum = 0, lsum = 0;
  for (std::size_t i = 0; i < keep; ++i) {
    const GemmPoint& p = *near[i].second;
    const double ratio = p.seconds / roofline_gemm_time(dev, prec, {p.ta, p.tb, p.m, p.n, p.k, 1});
    const double w = 1 / std::pow(near[i].first, 4);
    wsum += w;
    lsum += w * std::log(ratio);
  }
  return roof * std::exp(lsum / wsum);
}

}  // namespace

double roofline_gemm_time(const DeviceDesc& dev, Precision prec, const GemmCall& c) {
  if (c.m <= 0 || c.n <= 0 || c.k <= 0 || c.count <= 0) return 0;
  const double rate = dev.sustained[precision_index(prec)];
  const double a = activation_elem_bytes(prec);
  const double bytes = a * (c.m * c.k + c.k * c.n + c.m * c.n) * c.count;
  return c.flops() / rate + bytes / dev.hbm_bandwidth + dev.gemm_call_overhead;
}

double gemm_time(const DeviceDesc& dev, Precision prec, const GemmCall& c) {
  if (c.m <= 0 || c.n <= 0 || c.k <= 0 || c.count <= 0) return 0;
  if (dev.gemm_model == GemmModel::flat) return c.flops() / dev.sustained[precision_index(prec)];
  // The runtime issues a batch as that many calls (one per head and causal block).
  if (dev.gemm_model == GemmModel::measured && prec == Precision::fp32 && !dev.gemm_table.empty())
    return c.count * measured_call_time(dev, prec, c);
  return roofline_gemm_time(dev, prec, c);
}

BlockGemmCalls block_gemm_calls(const ModelDesc& m, const Layout& l, const SoftwareDesc& sw,
                                double imb) {
  const double B = l.micro_batch, T = double(m.seq), D = double(m.d_model), F = double(m.ffn);
  const double t = l.t, N = B * T / l.c, h = double(m.heads), dh = D / h;
  BlockGemmCalls g;
  for (const bool bwd : {false, true}) {
    auto& lin = bwd ? g.linear_bwd : g.linear_fwd;
    add_linear(lin, bwd, N, D / t + 2 * m.local_kv_width(l.t), D);
    add_linear(lin, bwd, N, D, D / t);
    if (m.moe()) {
      const double E = double(m.experts);
      const double local = std::max(1.0, E / (double(l.e) * t));
      add_linear(lin, bwd, N, E, D);
      const double tokens = N * double(m.top_k) * imb / t / local;
      auto& ex = bwd ? g.expert_bwd : g.expert_fwd;
      add_linear(ex, bwd, tokens, mlp_fc_rows(m), D, local);
      add_linear(ex, bwd, tokens, D, F, local);
    } else {
      add_linear(lin, bwd, N, mlp_fc_rows(m) / t, D);
      add_linear(lin, bwd, N, D, F / t);
    }
  }
  const double heads = B * h / t;
  const int block = sw.attention_block;
  if (l.c > 1 || block <= 0 || m.seq <= 0) {
    // The whole square (of the rank's T/c queries against all T keys); backward: two
    // products of each forward shape (dP, dV; dQ, dK).
    g.attention_fwd = {{'N', 'T', T / l.c, T, dh, heads}, {'N', 'N', T / l.c, dh, T, heads}};
    g.attention_bwd = {{'N', 'T', T / l.c, T, dh, heads}, {'T', 'N', T / l.c, dh, T, heads},
                       {'N', 'N', T / l.c, dh, T, heads}, {'T', 'N', T / l.c, dh, T, heads}};
    // Ring and blockwise attention keep no probabilities: their backward computes the
    // scores again (kernels/online_softmax.hpp).
    if (l.c > 1 || m.attention == Attention::blockwise) g.attention_bwd.push_back({'N', 'T', T / l.c, T, dh, heads});
    return g;
  }
  // Causal blocks as kernels/attention.hpp runs them: block i holds queries [r0, r0+n)
  // and meets keys [0, end); its keys are seen by the queries [r0, T).
  for (long long r0 = 0; r0 < m.seq; r0 += block) {
    const double n = double(std::min<long long>(block, m.seq - r0)), end = double(r0) + n;
    const double later = T - double(r0);
    g.attention_fwd.push_back({'N', 'T', n, end, dh, heads});    // S = Q K^T
    g.attention_fwd.push_back({'N', 'N', n, dh, end, heads});    // Y = P V
    g.attention_bwd.push_back({'N', 'T', n, end, dh, heads});    // dP = dY V^T
    g.attention_bwd.push_back({'T', 'N', n, dh, later, heads});  // dV = P^T dY
    g.attention_bwd.push_back({'N', 'N', n, dh, end, heads});    // dQ = dS K
    g.attention_bwd.push_back({'T', 'N', n, dh, later, heads});  // dK = dS^T Q
    if (m.attention == Attention::blockwise) g.attention_bwd.push_back({'N', 'T', n, end, dh, heads});  // S again
  }
  return g;
}

std::vector<GemmCall> head_gemm_calls(const ModelDesc& m, const Layout& l, bool backward) {
  std::vector<GemmCall> out;
  const double N = l.micro_batch * double(m.seq) / l.c;
  add_linear(out, backward, N, double(m.padded_vocab(l.t)) / l.t, double(m.d_model));
  return out;
}

double fused_attention_time(const ModelDesc& m, const ClusterDesc& cl, Precision prec,
                            const std::vector<GemmCall>& square, bool triangular) {
  double flops = 0;
  for (const GemmCall& c : square) flops += c.flops();
  // Tiles of kFusedTile queries x kFusedTile keys: n(n+1)/2 of the n^2 meet the causal
  // mask, n = T/tile over the whole sequence (a load-balanced ring gives every rank its
  // share of the same triangle).
  const double n = std::ceil(double(m.seq) / kFusedTile);
  const double causal = n > 0 && !triangular ? (n + 1) / (2 * n) : 1.0;
  const double rate = cl.software.fused_attention_rate > 0 ? cl.software.fused_attention_rate
                                                           : cl.device.sustained[precision_index(prec)];
  return causal * flops / rate;
}

BlockGemms block_forward_gemms(const ModelDesc& m, const Layout& l, const ClusterDesc& cl,
                               Precision prec, double imb) {
  const BlockGemmCalls calls = block_gemm_calls(m, l, cl.software, imb);
  BlockGemms g;
  auto sum = [&](const std::vector<GemmCall>& v, double& into, bool count_flops) {
    for (const GemmCall& c : v) {
      into += gemm_time(cl.device, prec, c);
      if (count_flops) g.flops += c.flops();
    }
  };
  sum(calls.linear_fwd, g.linear, true);
  sum(calls.expert_fwd, g.experts, true);
  sum(calls.attention_fwd, g.attention, true);
  sum(calls.linear_bwd, g.linear_bwd, false);
  sum(calls.expert_bwd, g.experts_bwd, false);
  sum(calls.attention_bwd, g.attention_bwd, false);
  if (cl.software.fused_attention) {
    // Causal blocks (software.attention_block, c = 1) are triangular already.
    const bool tri = l.c == 1 && cl.software.attention_block > 0;
    g.attention = fused_attention_time(m, cl, prec, calls.attention_fwd, tri);
    g.attention_bwd = fused_attention_time(m, cl, prec, calls.attention_bwd, tri);
  }
  g.linear += g.experts;
  g.linear_bwd += g.experts_bwd;
  return g;
}

double head_gemm_time(const ModelDesc& m, const Layout& l, const DeviceDesc& dev, Precision prec,
                      bool backward) {
  double s = 0;
  for (const GemmCall& c : head_gemm_calls(m, l, backward)) s += gemm_time(dev, prec, c);
  return s;
}

}  // namespace mini5d::plan
