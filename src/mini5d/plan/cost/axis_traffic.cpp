// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/plan/cost/axis_traffic.hpp"

#include <algorithm>

#include "mini5d/core/shard.hpp"
#include "mini5d/plan/cost/precision.hpp"
#include "mini5d/rules/pipeline_schedule.hpp"
#include "mini5d/rules/stage_split.hpp"
#include "mini5d/rules/zero3_buffers.hpp"

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

std::vector<long long> zero3_gathers_per_step(const pp::Spec& s, int stage, const std::vector<int>& chunk_of,
                                        bool first_is_embedding) {
  zero3::GatherBuffers b(chunk_of, first_is_embedding);
  std::vector<long long> count(chunk_of.size(), 0);
  auto visit = [&](int unit, bool forward) {
    const zero3::GatherBuffers::Need n = b.need(unit, forward);
    if (n.gather) ++count[std::size_t(unit)];
    if (n.prefetch >= 0) ++count[std::size_t(n.prefetch)];
  };
  const int units = int(chunk_of.size());
  b.drop();
  for (const pp::Action& a : pp::schedule(s, stage)) {
    if (!a.compute()) continue;
    const bool forward = a.op == pp::Op::forward;
    if (s.p == 1 ? forward : !forward) b.drop();
    if (forward) {
      for (int u = 0; u < units; ++u)
        if (chunk_of[std::size_t(u)] == a.chunk) visit(u, true);
    } else {
      for (int u = units - 1; u >= 0; --u)
        if (chunk_of[std::size_t(u)] == a.chunk && b.backward_reads(u)) visit(u, false);
    }
  }
  return count;
}

std::vector<StageUnit> stage_units(const ModelDesc& m, const Layout& l, int stage, int moe_every) {
  std::vector<StageUnit> out;
  const ParamCounts c = count_params(m, l.t);  // the embedding and head as padded for t
  const double t = l.t;
  const std::vector<long long> split = layout_split(m, l, moe_every);
  const int p = l.p, chunks = p * l.virtual_stages;
  for (int j = 0; j < l.virtual_stages; ++j) {
    const int vs = j * p + stage;
    if (vs == 0) out.push_back({j, c.token_embedding / t + c.position_embedding, 0, c.position_embedding});
    const long long first = first_block_of(split, vs);
    for (long long b = first; b < first + split[std::size_t(vs)]; ++b) {
      StageUnit u{j, c.attn_sharded / t + c.attn_replicated + m.kv_replicated_params(l.t), 0, c.attn_replicated};
      if (m.kv_shared_params(l.t) > 0) {
        // The unit holds its replicated run, then the QKV weight (D/t query rows, then the
        // shared rows), then the QKV bias likewise.
        const double D = double(m.d_model), q_rows = D / t, qkv_rows = q_rows + 2 * m.local_kv_width(l.t);
        u.kv_weight_at = u.replicated + q_rows * D;
        if (m.bias) u.kv_bias_at = u.replicated + qkv_rows * D + q_rows;
      }
      if (m.moe() && (b + 1) % moe_every == 0) {
        u.dense += c.router;
        u.replicated += c.router;
        // Whole experts, split over the e x t ranks.
        u.expert = (double(m.experts) / (double(l.e) * t)) * (c.mlp_sharded + c.mlp_replicated);
      } else {
        u.dense += c.mlp_sharded / t + c.mlp_replicated;
        u.replicated += c.mlp_replicated;
      }
      out.push_back(u);
    }
    if (vs == chunks - 1) {
      // A tied head on a separate last stage keeps its own copy of the embedding.
      const double head = !m.tie_embeddings ? c.head / t : p > 1 ? c.token_embedding / t : 0.0;
      out.push_back({j, c.final_norm + head, 0, c.final_norm});
    }
  }
  return out;
}

AxisTraffic step_traffic(const ModelDesc& m, const Layout& l, int stage, int moe_every, double dense_params,
                         double expert_params, double elem, int dense_rank, double grad_elem) {
  AxisTraffic a;
  const StageBlocks s = stage_blocks(m, l, stage, moe_every);
  const std::vector<StageUnit> units = stage_units(m, l, stage, moe_every);
  const double mb = l.accumulation;  // micro-batches per step
  const double N = double(l.micro_batch) * double(m.seq) / l.c, D = double(m.d_model);
  const double nd = N * D * elem;
  const bool sp = l.sp && l.t > 1, full = l.recompute == Recompute::full;
  const double own_rows = sp ? N / l.t : N;  // rows a rank holds outside TP regions

  if (l.t > 1) {
    double payloads = 0;  // [N, D] payloads per micro-batch
    if (s.embedding) payloads += sp ? 2 : 1;
    payloads += s.dense * ((sp ? 10 : 4) + (full ? (sp ? 4 : 2) : 0));
    payloads += s.moe * (5 + (full ? 2 : 0));
    if (s.head) payloads += sp ? 3 : 1;
    // The loss's row maxima and sums are fp32 whatever the activations' precision.
    const double loss = s.head ? (l.t * N + 2 * N) * 4 : 0;
    a.tp_activations = mb * (payloads * nd + loss);
    if (sp) {
      // ZeRO 0-1 sum every replicated gradient over t; from ZeRO 2 on a rank holds its
      // part of each unit only and sums the replicated elements in it: the part of the
      // unit's leading replicated run (params/param_layout.cpp puts it first).
      double rep = 0;
      for (const StageUnit& u : units) {
        if (l.zero <= 1 || l.dense_group() <= 1) {
          rep += u.replicated;
          continue;
        }
        const Span part = even_part(std::int64_t(u.dense), l.dense_group(), dense_rank);
        rep += double(std::max<std::int64_t>(0, std::min(part.end, std::int64_t(u.replicated)) - part.begin));
      }
      a.tp_grads = 4 * rep;
    }
    // Grouped-query attention with t > kv_heads: the shared key/value rows' gradients,
    // summed over the t/kv_heads ranks that hold them; from ZeRO 2 on, those in the
    // rank's part of the unit.
    const double rows = 2 * m.local_kv_width(l.t);
    for (const StageUnit& u : units) {
      if (u.kv_weight_at < 0) continue;
      if (l.zero <= 1 || l.dense_group() <= 1) {
        a.tp_grads += 4 * m.kv_shared_params(l.t);
        continue;
      }
      const Span part = even_part(std::int64_t(u.dense), l.dense_group(), dense_rank);
      auto in_part = [&](double at, double n) {
        const std::int64_t b = std::int64_t(at), e = std::int64_t(at + n);
        return double(std::max<std::int64_t>(0, std::min(part.end, e) - std::max(part.begin, b)));
      };
      a.tp_grads += 4 * in_part(u.kv_weight_at, rows * D);
      if (u.kv_bias_at >= 0) a.tp_grads += 4 * in_part(u.kv_bias_at, rows);
    }
  }
  if (l.c > 1) {
    // K and V of the key/value heads (grouped-query attention: kv_heads of them), c - 1
    // hops in the forward, again in a recomputed forward and in the backward, in the
    // activations' element size; the backward's travelling dK/dV, c - 1 hops in the
    // accumulation type (fp32 in a bf16 run: parallel/cp/ring_attention.hpp).
    const double block = 2 * double(l.micro_batch) * (double(m.seq) / l.c) * m.local_kv_width(l.t);
    const double kv_hops = (l.recompute == Recompute::none ? 2 : 3) * (l.c - 1.0);
    a.cp_activations = mb * (s.dense + s.moe) * block * (kv_hops * elem + (l.c - 1.0) * accumulation_bytes(elem));
  }
  if (l.e * l.t > 1 && s.moe > 0) a.ep_activations = mb * s.moe * 4 * own_rows * double(m.top_k) * D * elem;
  if (l.p > 1) a.pp_activations = mb * 2.0 * s.edges * own_rows * D * elem;
  // A tied embedding: the two ends of the pipeline sum their gradients of it once a
  // step, after ZeRO's reduction (fp32 gradients, like ZeRO's below).
  if (l.p > 1 && m.tie_embeddings && (stage == 0 || stage == l.p - 1))
    a.pp_grads = 4 * count_params(m, l.t).token_embedding / l.t;

  // ZeRO's gradient and weight traffic over a group (nothing over a group of one):
  // gradients once a step (ZeRO 0-1) or every micro-batch (2-3); weights none (0), the
  // updated shard gathered once (1-2), or each unit as often as ZeRO 3's two buffers
  // gather it in this stage's schedule (rules/zero3_buffers.hpp, replayed here).
  std::vector<long long> gathers;
  if (l.zero == 3) {
    std::vector<int> chunk_of;
    for (const StageUnit& u : units) chunk_of.push_back(u.chunk);
    const pp::Spec spec{l.schedule, l.p, l.virtual_stages, int(l.accumulation)};
    gathers = zero3_gathers_per_step(spec, stage, chunk_of, stage == 0);
  }
  auto zero_traffic = [&](double params, int group, bool experts, double& grads, double& weights) {
    if (group <= 1 || params == 0) return;
    // Gradients go as fp32 (the main gradients), or bf16 with grad_reduce_dtype=bf16;
    // the weights gathered are the working copy, in the activations' element size.
    const double P = params * grad_elem;
    grads = l.zero <= 1 ? P : mb * P;
    if (l.zero == 1 || l.zero == 2) weights = params * elem;
    if (l.zero == 3)
      for (std::size_t u = 0; u < units.size(); ++u)
        weights += double(gathers[u]) * elem * (experts ? units[u].expert : units[u].dense);
  };
  zero_traffic(dense_params, l.dense_group(), false, a.dp_grads, a.dp_weights);
  zero_traffic(expert_params, l.expert_group(), true, a.dp_expert_grads, a.dp_expert_weights);
  return a;
}

}  // namespace mini5d::plan
