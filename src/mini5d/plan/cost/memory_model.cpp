// SPDX-License-Identifier: BSD-3-Clause
// Memory formulas; see memory_model.hpp for the summary and docs/planner.md for the
// derivation. The activation tensor list mirrors Gpt::allocate_activations().
#include "mini5d/plan/cost/memory_model.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <numeric>
#include <tuple>

#include "mini5d/rules/attention_tiles.hpp"
#include "mini5d/rules/pipeline_schedule.hpp"

namespace mini5d::plan {

StateBytes zero_state_bytes(double params, int stage, int group, Precision prec,
                            bool fp32_grad_accum) {
  const StateBytesPerParam b = state_bytes_per_param(prec, fp32_grad_accum);
  const double G = group < 1 ? 1.0 : double(group);
  StateBytes s;
  s.weights = params * b.weight / (stage >= 3 ? G : 1.0);
  s.grads = params * b.grad / (stage >= 2 ? G : 1.0);
  s.optimizer = params * b.optimizer() / (stage >= 1 ? G : 1.0);
  return s;
}

double checkpoint_staging_bytes(double params, int stage, int group, Precision prec) {
  const double G = group < 1 ? 1.0 : double(group);
  // What ZeroOptimizer::weights() is: a bf16 run's master copy is sharded from stage 1.
  const bool weights_sharded = stage >= 3 || (prec == Precision::bf16 && stage >= 1);
  return params * 4.0 / (weights_sharded ? G : 1.0) + params * 8.0 / (stage >= 1 ? G : 1.0);
}

ShardParams block_params(const ModelDesc& m, const Layout& l) {
  const ParamCounts c = count_params(m);
  const double t = l.t;
  ShardParams s;
  s.dense = c.attn_sharded / t + c.attn_replicated + c.router + m.kv_replicated_params(l.t);
  // Whole experts, split over the e x t ranks (mini5d's scheme with t > 1: README,
  // expert parallelism), not each expert's MLP over t.
  if (m.moe())
    s.expert = (double(m.experts) / (double(l.e) * l.t)) * (c.mlp_sharded + c.mlp_replicated);
  else
    s.dense += c.mlp_sharded / t + c.mlp_replicated;
  return s;
}

ShardParams stage_params(const ModelDesc& m, const Layout& l, int stage) {
  const ParamCounts c = count_params(m, l.t);  // the embedding and head as padded for t
  const double t = l.t, blocks = stage_block_count(m, l, stage);
  const ShardParams one = block_params(m, l);
  ShardParams s;
  s.dense = blocks * one.dense;
  s.expert = blocks * one.expert;
  if (stage == 0) s.dense += c.token_embedding / t + c.position_embedding;
  if (stage == l.p - 1) {
    s.dense += c.final_norm;
    // A tied head on a separate last stage keeps its own copy of the embedding.
    if (!m.tie_embeddings) s.dense += c.head / t;
    else if (l.p > 1) s.dense += c.token_embedding / t;
  }
  return s;
}

ActShape act_shape(const ModelDesc& m, const Layout& l, Precision prec, double imbalance) {
  ActShape s;
  s.micro_batch = l.micro_batch;
  s.seq = double(m.seq), s.d_model = double(m.d_model), s.heads = double(m.heads);
  // The keys' width per rank over d_model/t (one head's when t > kv_heads: replicated).
  s.kv_ratio = m.local_kv_width(l.t) * l.t / double(m.d_model);
  s.ffn = double(m.ffn), s.vocab = double(m.padded_vocab(l.t));
  s.t = l.t, s.c = l.c, s.sp = l.sp;
  s.elem_bytes = activation_elem_bytes(prec);
  s.stat_bytes = accumulation_bytes(s.elem_bytes);
  s.experts = m.moe() ? double(m.experts) : 0.0;
  s.top_k = double(m.top_k);
  s.imbalance = m.moe() ? imbalance : 1.0;
  s.blockwise = m.attention == Attention::blockwise;
  s.rmsnorm = m.norm == Norm::rmsnorm;
  s.swiglu = m.mlp == Mlp::swiglu;
  s.rope = m.positions == Positions::rope;
  s.hidden_dropout = m.hidden_dropout > 0;
  s.attention_dropout = m.attention_dropout > 0;
  return s;
}

namespace {
double local_tokens(const ActShape& s) { return s.micro_batch * s.seq / s.c; }
double rep(const ActShape& s) { return s.sp ? 1.0 / s.t : 1.0; }
// Columns of [N, F] the MLP (or an expert) keeps: fc and gelu(fc), or SwiGLU's gate|up
// (2F) and silu(gate) * up; the backward's buffers are the same sizes.
double mlp_widths(const ActShape& s) { return s.swiglu ? 3.0 : 2.0; }
// Statistics a norm keeps per row: LayerNorm's mean and rstd, RMSNorm's rstd.
double norm_stats(const ActShape& s) { return s.rmsnorm ? 1.0 : 2.0; }
// Elements of the MLP part (dense MLP or router + experts) of one block: the backward's
// work buffers (workspace_bytes) are sized by it.
double mlp_elems(const ActShape& s) {
  const double N = local_tokens(s), t = s.t, r = rep(s);
  if (s.experts <= 1) return mlp_widths(s) * N * s.ffn / t;  // fc, gelu(fc)
  const double k = s.top_k, imb = s.imbalance;
  return 2 * N * s.experts * r                 // router logits and probabilities
         + k * imb * N * s.d_model * r * 2     // dispatched inputs, expert outputs
         + k * imb * mlp_widths(s) * N * s.ffn / t;  // expert fc, gelu(fc)
}
bool keeps_probs(const ActShape& s) { return s.c == 1 && !s.blockwise; }
// The backward's attention work buffers: dP [B, h/t, T, T] for full attention; for
// blockwise attention two buffers of min(64, T) x min(512, T) per head (one query tile's
// scores against a key panel, and their gradient)
// and a running sum per query row (the row maximum is kept in the lse:
// kernels/blockwise_attention.hpp); for ring attention two per-block buffers of
// (T/2c)^2 per head and the running max and sum per query row
// (parallel/cp/ring_attention.hpp).
// Blockwise and ring attention's buffers hold fp32 scores and statistics in a bf16 run
// (its core runs in fp32 on widened copies: kernels/widened_attention.hpp), so this
// returns bytes.
double core_work_bytes(const ActShape& s) {
  const double bh = s.micro_batch * (s.heads / s.t);
  if (keeps_probs(s)) return s.elem_bytes * bh * s.seq * s.seq;
  if (s.c == 1) {
    // The kernels' own tile sizes (rules/attention_tiles.hpp), each T when shorter.
    const double tile = std::min(double(rules::kAttentionTile), s.seq);
    const double panel = std::min(double(rules::kAttentionKeyPanel), s.seq);
    return s.stat_bytes * (2 * bh * tile * panel + bh * s.seq);
  }
  const double chunk = s.seq / (2.0 * s.c);
  return s.stat_bytes * (2 * bh * chunk * chunk + 2 * bh * (s.seq / s.c));
}
// A bf16 run's attention core (blockwise, or ring attention at c > 1) computes on fp32
// copies of q, k, v, y, dy and of dq, dk, dv (kernels/widened_attention.hpp; the ring
// widens each K/V block in hand into the k and v copies): [N, D/t] four times and
// [N, Dkv/t] four times, in the backward's workspace.
double widened_core_bytes(const ActShape& s) {
  if (!s.widened_core || s.elem_bytes >= 4 || (s.c == 1 && !s.blockwise)) return 0;
  return 4 * (4 + 4 * s.kv_ratio) * local_tokens(s) * s.d_model / s.t;
}
}  // namespace

double attention_prob_elems(const ActShape& s) {
  const double rows = s.micro_batch * (s.heads / s.t) * (s.seq / s.c);
  return keeps_probs(s) ? rows * s.seq : rows;
}

// A dropout mask: one byte per element (Megatron-LM keeps them as bytes whatever the
// precision).
constexpr double kMaskBytes = 1;

double hidden_dropout_bytes(const ActShape& s) {
  if (!s.hidden_dropout) return 0;
  // The two residual branches' masks, on the rank's rows (split by t under SP).
  return 2 * kMaskBytes * local_tokens(s) * s.d_model * rep(s);
}

double attention_dropout_bytes(const ActShape& s) {
  if (!s.attention_dropout || !keeps_probs(s)) return 0;
  // The mask and the dropped probabilities (what PV reads; P itself stays for the
  // softmax backward).
  return (kMaskBytes + s.elem_bytes) * attention_prob_elems(s);
}

double attention_core_bytes(const ActShape& s) {
  const double N = local_tokens(s), t = s.t;
  // q and y [N, D/t], k and v [N, Dkv/t], the probabilities (elements) or the
  // log-sum-exps (statistics), and attention dropout's mask and dropped probabilities
  return s.elem_bytes * (2 + 2 * s.kv_ratio) * N * s.d_model / t +
         (keeps_probs(s) ? s.elem_bytes : s.stat_bytes) * attention_prob_elems(s) + attention_dropout_bytes(s);
}

double moe_kept_bytes(const ActShape& s) {
  if (s.experts <= 1) return 0;
  const double R = local_tokens(s) * rep(s), k = s.top_k;
  // probabilities [R, E], top-k weights [R, k], the aux loss gradient [B, E] (the
  // router's statistics: fp32 in a bf16 run, model/moe_layer.hpp); the top-k indices
  // [R, k] as 4-byte integers.
  return s.stat_bytes * (R * s.experts + R * k + s.micro_batch * s.experts) + 4 * R * k;
}

double moe_routed_bytes(const ActShape& s) {
  if (s.experts <= 1) return 0;
  const double R = local_tokens(s) * rep(s), k = s.top_k, Nr = k * s.imbalance * R;
  // expert inputs [Nr, D], fc and gelu(fc) [Nr, F] (whole experts; SwiGLU: gate|up
  // [Nr, 2F] and its output), the outputs sent back [R k, D]; the send-row map [R k] and
  // the receive order [Nr] as 4-byte integers.
  return s.elem_bytes * (Nr * s.d_model + mlp_widths(s) * Nr * s.ffn + R * k * s.d_model) + 4 * (R * k + Nr);
}

double block_activation_bytes(const ActShape& s, Recompute r) {
  const double N = local_tokens(s), t = s.t, a = s.elem_bytes, rr = rep(s);
  // Full: the block's output; an MoE layer is not recomputed (model/block.hpp) and keeps
  // its routing and routed rows in every mode.
  if (r == Recompute::full) return a * N * s.d_model * rr + moe_kept_bytes(s) + moe_routed_bytes(s);
  const double kept = 4 * N * s.d_model * rr  // residual-class
                      + (2 + 2 * s.kv_ratio) * N * s.d_model / t  // qkv (D + 2Dkv), att_merged
                      + (s.experts > 1 ? 0.0 : mlp_elems(s));
  const double b = a * kept + s.stat_bytes * 2 * norm_stats(s) * N * rr + hidden_dropout_bytes(s) + moe_kept_bytes(s) +
                   moe_routed_bytes(s) +
                   attention_core_bytes(s);
  return r == Recompute::selective ? b - attention_core_bytes(s) : b;
}

double embedding_activation_bytes(const ActShape& s) {
  // The embedding output, and with hidden dropout its mask (the dropout after the
  // embedding, Korthikanti et al. 2022 section 4.3).
  const double rows = local_tokens(s) * s.d_model * rep(s);
  return s.elem_bytes * rows + (s.hidden_dropout ? kMaskBytes * rows : 0.0);
}

double head_activation_bytes(const ActShape& s) {
  const double N = local_tokens(s), rr = rep(s);
  // final norm output and stats, and the vocab-parallel logits of all local tokens
  return s.elem_bytes * (N * s.d_model * rr + N * s.vocab / s.t) + s.stat_bytes * norm_stats(s) * N * rr;
}

double workspace_bytes(const ActShape& s, Recompute r) {
  const double N = local_tokens(s), t = s.t, a = s.elem_bytes, rr = rep(s);
  // dres, dln; dqkv (D + 2Dkv), datt_merged, dq, dk, dv (Dkv each), dy; dfc, dgelu;
  // dprobs or the ring's block buffers (Gpt's work buffers)
  const double attn = (4 + 4 * s.kv_ratio) * N * s.d_model / t;
  double w = a * (2 * N * s.d_model * rr + attn + mlp_elems(s)) + core_work_bytes(s) + widened_core_bytes(s);
  // A vector of ones (bias gradients as a GEMM). (The token ids are the step's own
  // buffers, which the embedding reads in place: counted with the data.)
  w += s.stat_bytes * N;
  // Rotary positions: cos and sin of this rank's positions, [T/c, hd/2] each.
  if (s.rope) w += s.stat_bytes * (s.seq / s.c) * (s.d_model / s.heads);
  // Sequence parallelism: the [N, d_model] buffer each region gathers its rows into.
  if (s.sp && s.t > 1) w += a * N * s.d_model;
  // The vocab-parallel loss: every rank's row maxima, the agreed maxima, and the summed
  // exponentials and target logits.
  if (s.t > 1) w += s.stat_bytes * N * (s.t + 3);
  if (r == Recompute::selective) w += attention_core_bytes(s);
  // Full: one block's activations rebuilt in the backward, but its output, which each
  // block keeps (it is what block_activation_bytes(full) counts). The shared set has a
  // dense MLP's buffers (an MoE layer keeps its own), so it is a dense block's.
  if (r == Recompute::full) {
    ActShape dense = s;
    dense.experts = 0;
    w += block_activation_bytes(dense, Recompute::none) - a * N * s.d_model * rr;
  }
  return w;
}

double in_flight_microbatches(Schedule sch, int p, int m, int v, int stage) {
  switch (sch) {
    case Schedule::gpipe: return m;
    case Schedule::one_f_one_b: return std::min(m, p - stage);
    case Schedule::interleaved: {
      // Megatron's warm-up count for rank `stage` plus the one in steady state.
      const double chunks = std::min<double>(double(m) * v, 2.0 * (p - stage - 1) + (v - 1.0) * p + 1);
      return chunks / v;
    }
  }
  return m;
}

InFlight in_flight(const ModelDesc& m, const Layout& l, int stage, int moe_every) {
  if (l.p == 1) return {};
  if (l.virtual_stages == 1) {
    const double n = in_flight_microbatches(l.schedule, l.p, l.accumulation, 1, stage);
    return {n, n, n};
  }
  const std::vector<long long> blocks = chunk_blocks(layout_split(m, l, moe_every), l.p, stage);
  const Schedule kind = l.schedule;
  // The peak repeats: past the warm-up (at most 2p + (v-1)p forwards) the pairs in flight
  // change with a period of p*v forwards (each chunk's turn comes round every p*v), so
  // 4p micro-batches (a multiple of p, as interleaving needs) hold every value the
  // weight takes; the search would otherwise list m*v actions per candidate.
  const int m_cap = l.schedule == Schedule::interleaved ? std::min(l.accumulation, 4 * l.p) : l.accumulation;
  // The search meets the same (schedule, stage, chunk sizes) for many knob sets.
  using Key = std::tuple<int, int, int, int, int, std::vector<long long>>;
  static std::map<Key, InFlight> memo;
  static std::mutex lock;
  const Key key{int(kind), l.p, l.virtual_stages, m_cap, stage, blocks};
  std::lock_guard<std::mutex> guard(lock);
  auto it = memo.find(key);
  if (it == memo.end()) {
    const auto actions = pp::schedule({kind, l.p, l.virtual_stages, m_cap}, stage);
    std::vector<int> per_chunk;
    pp::peak_in_flight(actions, l.virtual_stages, &per_chunk);
    const double total = double(std::accumulate(blocks.begin(), blocks.end(), 0LL));
    const InFlight f{double(pp::peak_in_flight_weighted(actions, blocks)) / total, double(per_chunk.front()),
                     double(per_chunk.back())};
    it = memo.emplace(key, f).first;
  }
  return it->second;
}

double comm_buffer_bytes(const ModelDesc& m, const Layout& l, Precision prec,
                         const MemoryOptions& o, int stage) {
  const ActShape s = act_shape(m, l, prec, o.moe_imbalance);
  const double a = s.elem_bytes, N = local_tokens(s), rr = rep(s);
  const StateBytesPerParam pb = state_bytes_per_param(prec);
  double b = 0;
  if (l.dense_group() > 1) {
    // As the runtime holds them (parallel/dp/zero_optimizer.hpp): ZeRO 0-1 reduce in place,
    // in the gradient buffer; from ZeRO 2 on two block-sized gradient buffers rotate,
    // each with the rank's 1/G part of the reduced sum; ZeRO-3 adds the gathered
    // weights of the block in use and of the one prefetched.
    const ShardParams one = block_params(m, l);
    if (l.zero >= 2) b += 2 * one.total() * pb.grad * (1.0 + 1.0 / l.dense_group());
    if (l.zero >= 3) b += 2 * one.total() * pb.weight;
  }
  if (l.t > 1 && l.sp) {
    b += a * N * s.d_model;  // all-gather target
    // The gradients of the tensors every tensor rank holds, packed for their sum over t
    // (parallel/tp/replicated_grads.hpp): the stage's whole copy at ZeRO 0-1, the
    // rank's part of it from ZeRO 2 on (1/G of it, up to the partition's rounding).
    const ParamCounts c = count_params(m);
    double rep = stage_block_count(m, l, stage) * (c.attn_replicated + c.router + (m.moe() ? 0.0 : c.mlp_replicated));
    if (stage == 0) rep += c.position_embedding;
    if (stage == l.p - 1) rep += c.final_norm;
    if (l.zero >= 2) rep /= l.dense_group();
    b += rep * pb.grad;
  }
  if (l.t > m.kv()) {
    // The key/value rows t/kv_heads ranks share, packed for their sum over them (as the
    // replicated tensors' above).
    double shared = stage_block_count(m, l, stage) * m.kv_shared_params(l.t);
    if (l.zero >= 2) shared /= l.dense_group();
    b += shared * pb.grad;
  }
  if (l.p > 1) b += 2 * a * N * s.d_model * rr;                     // send + receive
  // Ring attention: the K/V block in hand and the one arriving, and the same for the
  // travelling dK/dV in the backward (parallel/cp/ring_attention.hpp), of the key/value
  // heads only; dK/dV in the accumulation type (fp32 in a bf16 run).
  if (l.c > 1) b += 2 * (a + s.stat_bytes) * 2 * s.micro_batch * (s.seq / l.c) * (s.kv_ratio * s.d_model / l.t);
  if (l.e > 1) b += 2 * a * s.top_k * s.imbalance * N * s.d_model * rr;  // all-to-all in/out
  return b;
}

MemoryBreakdown stage_memory(const ModelDesc& m, const TrainDesc& tr, const ClusterDesc& cl,
                             const Layout& l, int stage, const MemoryOptions& o) {
  MemoryBreakdown mb;
  mb.stage = stage;
  const ShardParams sp = stage_params(m, l, stage);
  const StateBytes dense = zero_state_bytes(sp.dense, l.zero, l.dense_group(), tr.precision,
                                            tr.fp32_grad_accum);
  const StateBytes expert = zero_state_bytes(sp.expert, l.zero, l.expert_group(),
                                             tr.precision, tr.fp32_grad_accum);
  mb.weights = dense.weights + expert.weights;
  mb.grads = dense.grads + expert.grads;
  mb.optimizer = dense.optimizer + expert.optimizer;
  mb.checkpoint_staging = checkpoint_staging_bytes(sp.dense, l.zero, l.dense_group(), tr.precision) +
                          checkpoint_staging_bytes(sp.expert, l.zero, l.expert_group(), tr.precision);
  const ActShape s = act_shape(m, l, tr.precision, o.moe_imbalance);
  const InFlight f = in_flight(m, l, stage);
  mb.activations = f.blocks * stage_block_count(m, l, stage) * block_activation_bytes(s, l.recompute);
  if (stage == 0) mb.activations += f.embedding * embedding_activation_bytes(s);
  if (stage == l.p - 1) mb.activations += f.head * head_activation_bytes(s);
  mb.workspace = workspace_bytes(s, l.recompute);
  mb.comm_buffers = comm_buffer_bytes(m, l, tr.precision, o, stage);
  mb.reserved = cl.device.reserved;
  return mb;
}

MemoryBreakdown device_memory(const ModelDesc& m, const TrainDesc& tr, const ClusterDesc& cl,
                              const Layout& l, const MemoryOptions& o) {
  // Any stage can be the fullest once stages differ in blocks; ties keep the first.
  MemoryBreakdown fullest = stage_memory(m, tr, cl, l, 0, o);
  for (int s : distinct_stages(m, l)) {
    if (s == 0) continue;
    MemoryBreakdown here = stage_memory(m, tr, cl, l, s, o);
    if (here.total() > fullest.total()) fullest = here;
  }
  return fullest;
}

}  // namespace mini5d::plan
