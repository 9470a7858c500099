// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/model/moe_layer.hpp"

#include <algorithm>

#include "mini5d/kernels/convert.hpp"
#include "mini5d/kernels/fill.hpp"
#include "mini5d/kernels/gelu.hpp"
#include "mini5d/kernels/linear.hpp"
#include "mini5d/kernels/swiglu.hpp"
#include "mini5d/parallel/cp/cp_comm.hpp"
#include "mini5d/kernels/moe.hpp"

namespace mini5d::model {

namespace {
// A [rows, cols] view of `m`, reallocated (with room to spare) when it is too small;
// `charge` follows the bytes.
template <class S>
MatU<S> grown(Mat<S>& m, mem::Charge& charge, const char* label, std::int64_t rows, std::int64_t cols) {
  if (std::int64_t(m.extent(0)) < rows || std::int64_t(m.extent(1)) != cols) {
    const std::int64_t before = mem::view_bytes(m);
    const std::int64_t want = std::max<std::int64_t>(rows + rows / 4, 1);
    m = Mat<S>();
    m = Mat<S>(Kokkos::ViewAllocateWithoutInitializing(label), want, cols);
    charge.grow(mem::view_bytes(m) - before);
  }
  return MatU<S>(m.data(), rows, cols);
}

kernels::IVecU grown_ints(Vec<int>& v, mem::Charge& charge, const char* label, std::int64_t n) {
  if (std::int64_t(v.extent(0)) < n) {
    const std::int64_t before = mem::view_bytes(v);
    v = Vec<int>();
    v = Vec<int>(Kokkos::ViewAllocateWithoutInitializing(label), std::max<std::int64_t>(n + n / 4, 1));
    charge.grow(mem::view_bytes(v) - before);
  }
  return kernels::IVecU(v.data(), n);
}

// Queued on the rank's execution space instance (a deep_copy without one fences the
// whole device). `src` must stay unchanged until the instance has run the copy: the
// plans it comes from are the layer's members, replaced only by the next forward, which
// fences the instance first (routing_to_host).
void to_device(kernels::IVecU dst, const std::vector<int>& src) {
  Kokkos::View<const int*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> h(src.data(), src.size());
  Kokkos::deep_copy(ExecSpace(), dst, h);
}

// Expert j's slab of a stacked [E_loc * r, c] tensor, and its bias row.
template <class S>
MatU<S> expert_mat(MatU<S> stacked, int j, int r) {
  const int c = int(stacked.extent(1));
  return MatU<S>(stacked.data() + std::int64_t(j) * r * c, r, c);
}
template <class S>
VecU<S> expert_bias(MatU<S> b, int j) {
  return VecU<S>(b.data() + std::int64_t(j) * b.extent(1), b.extent(1));
}
template <class S>
MatU<S> slab(MatU<S> m, int begin, int rows) {
  return MatU<S>(m.data() + std::int64_t(begin) * m.extent(1), rows, m.extent(1));
}

// A bf16 router's fp32 copies of its input rows and weight (MoeWork, workspace).
template <class S>
MatU<float> widened_router_input(MoeWork<S>& work, CMatU<S> x) {
  auto xw = grown<float>(work.router_x, work.charge, "mini5d::ep::router_input_fp32", x.extent(0), x.extent(1));
  kernels::convert("mini5d::ep::widen_router_input", xw, x);
  return xw;
}
template <class S>
CMatU<float> widened_router_weight(MoeWork<S>& work, const MoeTensors<S>& w) {
  const CMatU<S> wr(w.router_w);
  auto ww = grown<float>(work.router_w, work.charge, "mini5d::ep::router_weight_fp32", wr.extent(0), wr.extent(1));
  kernels::convert("mini5d::ep::widen_router_weight", ww, wr);
  return ww;
}
}  // namespace

template <class S>
MoeLayer<S>::MoeLayer(Context<S>& ctx, Alloc& kept) : routed_(mem::Category::activations, 0) {
  const int R = ctx.dims.rows, E = ctx.moe.experts, k = ctx.moe.top_k;
  probs_ = kept.mat<acc_t<S>>("mini5d::ep::router_probs", R, E);
  w_ = kept.mat<acc_t<S>>("mini5d::ep::router_weights", R, k);
  aux_ = kept.mat<acc_t<S>>("mini5d::ep::aux_grad", ctx.dims.batch, E);
  idx_ = Vec<int>(Kokkos::ViewAllocateWithoutInitializing("mini5d::ep::topk"), std::size_t(R) * k);
  kept.bytes += mem::view_bytes(idx_);
  // On a host backend these are the device views themselves (no allocation, no copy).
  probs_h_ = Kokkos::create_mirror_view(probs_);
  aux_h_ = Kokkos::create_mirror_view(aux_);
  idx_h_ = Kokkos::create_mirror_view(idx_);
  if (!ctx.moe_work) ctx.moe_work = std::make_shared<MoeWork<S>>();
}

template <class S>
void MoeLayer<S>::forward(Context<S>& ctx, const MoeTensors<S>& w, MatU<S> out, CMatU<S> x) {
  const MoeSettings& m = ctx.moe;
  const int R = int(x.extent(0)), D = int(x.extent(1)), E = m.experts, k = m.top_k, F = m.ffn;
  const int P = ctx.ep->size(), T = ctx.dims.seq, B = ctx.dims.batch;
  MoeWork<S>& work = *ctx.moe_work;
  // Router: logits into probs_, then the softmax in place. A bf16 model runs the whole
  // router in fp32 on widened copies of x and Wr (as Megatron-LM's moe_router_dtype=fp32):
  // logits rounded to bf16 would tie experts 2^-8 apart, and routing would then flip
  // between layouts on rounding noise.
  if constexpr (is_bf16_v<S>) {
    kernels::matmul_nt<float>(MatU<float>(probs_), widened_router_input(work, x), widened_router_weight(work, w));
  } else {
    kernels::matmul_nt<S>(MatU<S>(probs_), x, CMatU<S>(w.router_w));
  }
  kernels::router_softmax_topk<acc_t<S>>(probs_, kernels::IVecU(idx_.data(), idx_.extent(0)), w_);
  // The routing is planned on the host (the all-to-all's counts are MPI's arguments): the
  // picks and probabilities come back on this rank's instance, and its fence (not a
  // global one) is the step's one wait per MoE layer for them.
  Kokkos::deep_copy(ExecSpace(), idx_h_, idx_);
  Kokkos::deep_copy(ExecSpace(), probs_h_, probs_);
  fence("mini5d::ep::routing_to_host");
  const auto& idx_h = idx_h_;
  const auto& probs_h = probs_h_;
  chosen_.assign(idx_h.data(), idx_h.data() + idx_h.extent(0));
  const std::vector<int>& chosen = chosen_;
  send_ = ep::plan_send(chosen, R, k, E, P, ep::expert_capacity(m.capacity_factor, R, k, E));
  auto& st = ctx.moe_stats;
  if (st.load.size() != std::size_t(E)) st.load.assign(std::size_t(E), 0.0);
  for (int e = 0; e < E; ++e) st.load[e] += send_.count[e];
  st.dropped += double(send_.total_dropped());

  // Load-balancing loss per sequence: [counts | probability sums] per (sequence, expert)
  // over the sequence's rows, summed over the tensor ranks that hold its other rows and
  // over the context ring that holds its other tokens. Tg: the whole sequence's tokens.
  std::vector<double> seq(std::size_t(B) * 2 * E, 0.0);
  for (int r = 0; r < R; ++r) {
    double* s = &seq[std::size_t((ctx.dims.row_begin + r) / T) * 2 * E];
    for (int j = 0; j < k; ++j) s[chosen[std::size_t(r) * k + j]] += 1;
    for (int e = 0; e < E; ++e) s[E + e] += double(probs_h(r, e));
  }
  const bool split = ctx.region.sequence_split(), ring = ctx.cp != nullptr;  // set when c > 1
  if (m.aux_coef > 0 && split) ctx.region.comm->allreduce_host(seq.data(), int(seq.size()));
  if (m.aux_coef > 0 && ring) ctx.cp->sum_host(seq.data(), int(seq.size()));
  const double Tg = double(T) * ctx.dims.cp;
  const auto& aux_h = aux_h_;  // its last copy to aux_ ran before routing_to_host returned
  double aux = 0;
  for (int b = 0; b < B; ++b)
    for (int e = 0; e < E; ++e) {
      const double f = seq[std::size_t(b) * 2 * E + e] / (Tg * k), p = seq[std::size_t(b) * 2 * E + E + e] / Tg;
      aux += E * f * p;
      aux_h(b, e) = acc_t<S>(m.aux_coef * E * f * ctx.grad_scale);
    }
  Kokkos::deep_copy(ExecSpace(), aux_, aux_h);  // read by the backward's kernels, on the same instance
  // In units of the summed token loss (the trainer divides by the global tokens); the
  // tensor ranks and the ring share the statistics, so one of them counts it.
  const bool counts = (!split || ctx.region.comm->rank() == 0) && (!ring || ctx.cp->rank() == 0);
  if (counts) st.aux += m.aux_coef * Tg * aux;

  // Dispatch: the count exchange, then the rows.
  const int A = send_.rows;
  auto row = grown_ints(row_, routed_, "mini5d::ep::send_row", std::int64_t(R) * k);
  to_device(row, send_.row);
  auto send = grown<S>(work.send, work.charge, "mini5d::ep::send", A, D);
  kernels::dispatch_rows<S>(send, x, row, k);
  std::vector<double> mine(send_.count.begin(), send_.count.end()), all;
  ctx.ep->exchange_counts(mine, all);
  recv_ = ep::plan_receive(all, E, P, ctx.ep->rank());
  const int Nr = recv_.rows;
  auto recv = grown<S>(work.recv, work.charge, "mini5d::ep::recv", Nr, D);
  ctx.ep->template alltoallv_rows<S>(send, send_.send_rows, recv, recv_.recv_rows);
  auto order = grown_ints(order_, routed_, "mini5d::ep::order", Nr);
  to_device(order, recv_.order);
  auto xin = grown<S>(xin_, routed_, "mini5d::ep::expert_in", Nr, D);
  kernels::permute_rows<S>(xin, recv, order, false);
  ctx.hooks->progress();

  // The experts: one GEMM per linear per local expert, over its slab.
  const int Fin = m.swiglu ? 2 * F : F;  // SwiGLU: gate and up in one GEMM
  auto h = grown<S>(h_, routed_, "mini5d::ep::expert_fc", Nr, Fin);
  auto a = grown<S>(a_, routed_, "mini5d::ep::expert_fc_gelu", Nr, F);
  auto y = grown<S>(work.y, work.charge, "mini5d::ep::expert_out", Nr, D);
  for (int j = 0; j < m.local_experts; ++j) {
    const int n = recv_.expert_rows[j], b0 = recv_.expert_begin[j];
    if (n == 0) continue;
    kernels::linear_forward<S>(slab(h, b0, n), slab(xin, b0, n), expert_mat(w.fc_w, j, Fin), expert_bias(w.fc_b, j));
    if (m.swiglu)
      kernels::swiglu_forward<S>(slab(a, b0, n), slab(h, b0, n));
    else
      kernels::gelu_forward<S>(slab(a, b0, n), slab(h, b0, n));
    kernels::linear_forward<S>(slab(y, b0, n), slab(a, b0, n), expert_mat(w.proj_w, j, D), expert_bias(w.proj_b, j));
  }

  // Combine: back to the sending ranks, then the weighted sum.
  kernels::permute_rows<S>(recv, y, order, true);
  auto ysent = grown<S>(ysent_, routed_, "mini5d::ep::expert_out_sent", A, D);
  ctx.ep->template alltoallv_rows<S>(recv, recv_.recv_rows, ysent, send_.send_rows);
  kernels::combine_rows<S>(out, ysent, row, w_);
}

template <class S>
void MoeLayer<S>::backward(Context<S>& ctx, const MoeTensors<S>& w, MoeTensors<acc_t<S>>& g, MatU<S> dx, CMatU<S> dout,
                           CMatU<S> x) {
  const MoeSettings& m = ctx.moe;
  const int R = int(x.extent(0)), D = int(x.extent(1)), E = m.experts, k = m.top_k, F = m.ffn;
  const int A = send_.rows, Nr = recv_.rows, Fin = m.swiglu ? 2 * F : F;
  MoeWork<S>& work = *ctx.moe_work;
  const kernels::IVecU row(row_.data(), std::size_t(R) * k), order(order_.data(), std::size_t(Nr));
  const MatU<S> xin(xin_.data(), Nr, D), h(h_.data(), Nr, Fin), a(a_.data(), Nr, F), ysent(ysent_.data(), A, D);
  // Combine's backward: dL/dw and the gradient of each sent row, sent to the experts.
  auto dw = grown<acc_t<S>>(work.dw, work.charge, "mini5d::ep::dweights", R, k);
  auto dsend = grown<S>(work.send, work.charge, "mini5d::ep::send", A, D);
  kernels::combine_rows_backward<S>(dw, dsend, dout, ysent, row, w_);
  auto recv = grown<S>(work.recv, work.charge, "mini5d::ep::recv", Nr, D);
  ctx.ep->template alltoallv_rows<S>(dsend, send_.send_rows, recv, recv_.recv_rows);
  auto dy = grown<S>(work.y, work.charge, "mini5d::ep::expert_out", Nr, D);
  kernels::permute_rows<S>(dy, recv, order, false);
  ctx.hooks->progress();

  // The experts' backward, slab by slab; dy's slab is overwritten by dx's.
  auto dh = grown<S>(work.dh, work.charge, "mini5d::ep::expert_dfc", Nr, Fin);
  // SwiGLU: dL/d(silu(gate) * up) has its own buffer; GELU's is dh itself, in place.
  auto da = m.swiglu ? grown<S>(work.da, work.charge, "mini5d::ep::expert_dact", Nr, F) : dh;
  if (std::int64_t(work.ones.extent(0)) < std::max(Nr, 1)) {
    const std::int64_t before = mem::view_bytes(work.ones);
    work.ones = Vec<acc_t<S>>("mini5d::ep::ones", std::size_t(std::max(Nr, 1) + Nr / 4));
    kernels::fill("mini5d::ep::ones", work.ones, acc_t<S>(1));
    work.charge.grow(mem::view_bytes(work.ones) - before);
  }
  const CVecU<acc_t<S>> ones(work.ones.data(), work.ones.extent(0));
  for (int j = 0; j < m.local_experts; ++j) {
    const int n = recv_.expert_rows[j], b0 = recv_.expert_begin[j];
    if (n == 0) continue;
    kernels::linear_backward<S>(slab(da, b0, n), expert_mat(g.proj_w, j, D), expert_bias(g.proj_b, j), slab(dy, b0, n),
                                slab(a, b0, n), expert_mat(w.proj_w, j, D), ones);
    if (m.swiglu)
      kernels::swiglu_backward<S>(slab(dh, b0, n), slab(da, b0, n), slab(h, b0, n));
    else
      kernels::gelu_backward<S>(slab(dh, b0, n), slab(dh, b0, n), slab(h, b0, n));
    kernels::linear_backward<S>(slab(dy, b0, n), expert_mat(g.fc_w, j, Fin), expert_bias(g.fc_b, j), slab(dh, b0, n),
                                slab(xin, b0, n), expert_mat(w.fc_w, j, Fin), ones);
  }
  ctx.hooks->progress();

  // Back to the sending ranks; each token sums its assignments' input gradients.
  kernels::permute_rows<S>(recv, dy, order, true);
  ctx.ep->template alltoallv_rows<S>(recv, recv_.recv_rows, dsend, send_.send_rows);
  kernels::dispatch_rows_backward<S>(dx, dsend, row, k);

  // Router: dL/dlogits from the combine weights and the aux loss, then the linear.
  auto dlogits = grown<acc_t<S>>(work.dlogits, work.charge, "mini5d::ep::dlogits", R, E);
  kernels::router_backward<acc_t<S>>(dlogits, probs_, kernels::CIVecU(idx_.data(), idx_.extent(0)), w_, dw, aux_,
                                     ctx.dims.row_begin, ctx.dims.seq);
  if constexpr (is_bf16_v<S>) {
    // fp32 throughout (the forward's widened copies were overwritten by later layers):
    // the main gradient of Wr, then dL/dx in fp32, added to dx with one rounding.
    const MatU<float> xw = widened_router_input(work, x);
    const CMatU<float> ww = widened_router_weight(work, w);
    kernels::linear_backward<float>(MatU<float>(), g.router_w, VecU<float>(), dlogits, xw, ww, ones);
    kernels::linear_backward_input<float>(xw, dlogits, ww);
    kernels::add_fp32_rows<S>(dx, xw);
  } else {
    kernels::linear_backward<S>(dx, g.router_w, VecU<acc_t<S>>(), dlogits, x, CMatU<S>(w.router_w), ones, true);
  }
  ctx.hooks->progress();
}

template class MoeLayer<float>;
template class MoeLayer<double>;
template class MoeLayer<bf16>;

}  // namespace mini5d::model
