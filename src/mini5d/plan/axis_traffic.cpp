// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/plan/axis_traffic.hpp"

#include "mini5d/core/stage_split.hpp"

namespace mini5d::plan {

StageBlocks stage_blocks(const ModelDesc& m, const Layout& l, int stage, int moe_every) {
  StageBlocks s;
  const int p = l.p, v = l.virtual_stages, chunks = p * v;
  const std::vector<long long> split = layout_split(m, l, moe_every);
  for (int j = 0; j < v; ++j) {
    const int vs = j * p + stage;
    const long long first = first_block_of(split, vs);
    for (long long b = first; b < first + split[std::size_t(vs)]; ++b) {
      if (m.moe() && (b + 1) % moe_every == 0)
        ++s.moe;
      else
        ++s.dense;
    }
    s.embedding = s.embedding || vs == 0;
    s.head = s.head || vs == chunks - 1;
    s.edges += (vs > 0 ? 1 : 0) + (vs < chunks - 1 ? 1 : 0);
  }
  return s;
}

AxisTraffic step_traffic(const ModelDesc& m, const Layout& l, int stage, int moe_every, double dense_params,
                         double expert_params, double elem) {
  AxisTraffic a;
  const StageBlocks s = stage_blocks(m, l, stage, moe_every);
  const ParamCounts pc = count_params(m, l.t);
  const double mb = l.accumulation;  // micro-batches per step
  const double N = double(l.micro_batch) * double(m.seq) / l.c, D = double(m.d_model);
  const double nd = N * D * elem;
  const bool sp = l.sp && l.t > 1, full = l.recompute == Recompute::full;
  const double own_rows = sp ? N / l.t : N;  // rows a rank holds outside TP regions

  if (l.t > 1) {
    double units = 0;  // [N, D] payloads per micro-batch
    if (s.embedding) units += sp ? 2 : 1;
    units += s.dense * ((sp ? 10 : 4) + (full ? (sp ? 4 : 2) : 0));
    units += s.moe * (5 + (full ? 2 : 0));
    if (s.head) units += sp ? 3 : 1;
    const double loss = s.head ? (l.t * N + 2 * N) * elem : 0;
    a.tp_activations = mb * (units * nd + loss);
    if (sp) {
      const double block_rep = pc.attn_replicated;
      double rep = s.dense * (block_rep + pc.mlp_replicated) + s.moe * (block_rep + pc.router);
      if (s.embedding) rep += pc.position_embedding;
      if (s.head) rep += pc.final_norm;
      a.tp_grads = 4 * rep;
    }
    // Grouped-query attention with t > kv_heads: the shared key/value rows' gradients,
    // summed over the t/kv_heads ranks that hold them (counted whole from ZeRO 2 on, as
    // the replicated tensors').
    a.tp_grads += 4 * (s.dense + s.moe) * m.kv_shared_params(l.t);
  }
  if (l.c > 1) {
    // K and V of the key/value heads (grouped-query attention: kv_heads of them).
    const double block = 2 * double(l.micro_batch) * (double(m.seq) / l.c) * m.local_kv_width(l.t) * elem;
    const double hops = (l.recompute == Recompute::none ? 3 : 4) * (l.c - 1.0);
    a.cp_activations = mb * (s.dense + s.moe) * hops * block;
  }
  if (l.e * l.t > 1 && s.moe > 0) a.ep_activations = mb * s.moe * 4 * own_rows * double(m.top_k) * D * elem;
  if (l.p > 1) a.pp_activations = mb * 2.0 * s.edges * own_rows * D * elem;

  // ZeRO's gradient and weight traffic over a group (nothing over a group of one).
  auto zero_traffic = [&](double params, int group, double& grads, double& weights) {
    if (group <= 1 || params == 0) return;
    const double P = params * 4;
    grads = l.zero <= 1 ? P : mb * P;
    weights = l.zero == 0 ? 0 : l.zero <= 2 ? P : mb * 2 * P;
  };
  zero_traffic(dense_params, l.dense_group(), a.dp_grads, a.dp_weights);
  zero_traffic(expert_params, l.expert_group(), a.dp_expert_grads, a.dp_expert_weights);
  a.zero3_bound = l.zero == 3 && (l.dense_group() > 1 || l.expert_group() > 1);
  return a;
}

}  // namespace mini5d::plan
