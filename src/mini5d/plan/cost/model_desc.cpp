// SPDX-License-Identifier: BSD-3-Clause
// Parameter counts of mini5d's GPT; the tensor list mirrors params/param_layout.cpp so
// that the planner's byte counts equal the runtime's flat buffers.
#include "mini5d/plan/cost/model_desc.hpp"

#include "mini5d/rules/vocab_padding.hpp"

namespace mini5d::plan {

double mlp_fc_rows(const ModelDesc& m) { return (m.mlp == Mlp::swiglu ? 2.0 : 1.0) * double(m.ffn); }

double norm_params(const ModelDesc& m) {
  return (m.bias && m.norm == Norm::layernorm ? 2.0 : 1.0) * double(m.d_model);
}

ParamCounts count_params(const ModelDesc& m) {
  const double V = double(m.vocab), D = double(m.d_model), T = double(m.seq),
               F = double(m.ffn), L = double(m.layers), Fin = mlp_fc_rows(m);
  const double b = m.bias ? 1.0 : 0.0;  // model.bias=false: no linear has a bias
  ParamCounts c;
  // Column-parallel QKV (weight + bias; D query columns, Dkv each of keys and values)
  // and row-parallel proj weight are cut by t; the proj bias is added after the
  // all-reduce, so it is replicated with the norms.
  const double Dqkv = D + 2 * m.kv_width();
  c.attn_sharded = Dqkv * D + b * Dqkv + D * D;
  c.attn_replicated = b * D + 2 * norm_params(m);  // proj bias, LN1, LN2
  // fc (SwiGLU: gate and up) weight + bias, proj (down) weight.
  c.mlp_sharded = D * Fin + b * Fin + F * D;
  c.mlp_replicated = b * D;  // proj bias
  const double E = m.moe() ? double(m.experts) : 1.0;
  c.router = m.moe() ? D * E : 0.0;
  c.token_embedding = V * D;
  c.position_embedding = m.positions == Positions::rope ? 0.0 : T * D;  // rotary positions have no table
  c.final_norm = norm_params(m);
  c.head = m.tie_embeddings ? 0.0 : V * D;
  const double block = c.attn_sharded + c.attn_replicated + c.router +
                       E * (c.mlp_sharded + c.mlp_replicated);
  c.total = L * block + c.token_embedding + c.position_embedding + c.final_norm + c.head;
  c.expert_total = m.moe() ? L * E * (c.mlp_sharded + c.mlp_replicated) : 0.0;
  const double k = m.moe() ? double(m.top_k) : 1.0;
  c.matmul_active = L * ((Dqkv + D) * D + k * (Fin + F) * D + c.router) + V * D;
  return c;
}

long long ModelDesc::padded_vocab(long long t) const { return mini5d::padded_vocab(vocab, vocab_pad_to, t); }

ParamCounts count_params(const ModelDesc& m, long long t) {
  ModelDesc padded = m;
  padded.vocab = m.padded_vocab(t);
  return count_params(padded);
}

double model_flops_per_step(const ModelDesc& m, double tokens, long long t) {
  const ParamCounts c = count_params(m, t);
  return tokens * (6.0 * c.matmul_active +
                   12.0 * double(m.layers) * double(m.seq) * double(m.d_model));
}

}  // namespace mini5d::plan
