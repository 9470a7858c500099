// SPDX-License-Identifier: BSD-3-Clause
// GEMM shapes of mini5d's block (see compute_model.hpp). With N = B*T/c local tokens,
// width D, MLP width F, h heads of dh = D/h, tensor degree t:
//   QKV        N x D   . D x 3D/t          projection  N x D/t . D/t x D
//   fc         N x D   . D x F/t           proj        N x F/t . F/t x D
//   scores     (B h/t) x [T/c x dh . dh x T]   PV  (B h/t) x [T/c x T . T x dh]
// MoE: router N x D . D x E, and E/(e t) whole experts per rank, each taking
// N k imb / (t E/(e t)) of the rank's dispatched tokens.
#include "mini5d/plan/compute_model.hpp"

#include <algorithm>

namespace mini5d::plan {

double gemm_time(const DeviceDesc& dev, Precision prec, double m, double n, double k,
                 double batch) {
  if (m <= 0 || n <= 0 || k <= 0 || batch <= 0) return 0;
  const double rate = dev.sustained[precision_index(prec)];
  const double flops = 2 * m * n * k * batch;
  if (dev.gemm_model == GemmModel::flat) return flops / rate;
  const double a = activation_elem_bytes(prec);
  const double bytes = a * (m * k + k * n + m * n) * batch;
  return flops / rate + bytes / dev.hbm_bandwidth + dev.gemm_call_overhead;
}

BlockGemms block_forward_gemms(const ModelDesc& m, const Layout& l, const DeviceDesc& dev,
                               Precision prec, double imb) {
  const double B = l.micro_batch, T = double(m.seq), D = double(m.d_model), F = double(m.ffn);
  const double t = l.t, N = B * T / l.c, h = double(m.heads), dh = D / h;
  BlockGemms g;
  auto add = [&](double& into, double mm, double nn, double kk, double batch = 1) {
    into += gemm_time(dev, prec, mm, nn, kk, batch);
    g.flops += 2 * mm * nn * kk * batch;
  };
  add(g.linear, N, 3 * D / t, D);
  add(g.linear, N, D, D / t);
  const double attention_linear = g.linear;
  if (m.moe()) {
    const double E = double(m.experts);
    const double local = std::max(1.0, E / (double(l.e) * t));
    add(g.linear, N, E, D);
    const double tokens = N * double(m.top_k) * imb / t / local;
    add(g.linear, tokens, F, D, local);
    add(g.linear, tokens, D, F, local);
    g.experts = g.linear - attention_linear;
  } else {
    add(g.linear, N, F / t, D);
    add(g.linear, N, D, F / t);
  }
  const double heads = B * h / t;
  add(g.attention, T / l.c, T, dh, heads);
  add(g.attention, T / l.c, dh, T, heads);
  return g;
}

double head_forward_gemm(const ModelDesc& m, const Layout& l, const DeviceDesc& dev,
                         Precision prec) {
  const double N = l.micro_batch * double(m.seq) / l.c;
  return gemm_time(dev, prec, N, double(m.vocab) / l.t, double(m.d_model));
}

}  // namespace mini5d::plan
