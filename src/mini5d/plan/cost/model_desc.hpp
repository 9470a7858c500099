// SPDX-License-Identifier: BSD-3-Clause
// What the planner needs to know about the model and the training run, and the
// parameter counts derived from it.
//
// The model is mini5d's GPT (docs/architecture.md, src/mini5d/params/param_layout.cpp): token
// and learned position embeddings (none with rotary positions), pre-LN blocks (LN1, fused QKV linear with bias,
// attention output projection with bias, LN2, GELU MLP fc/proj with biases), final
// LayerNorm, LM head without bias (untied unless tie_embeddings). A mixture-of-experts
// model replaces every block's MLP with a router (d_model x experts, no bias) and
// `experts` copies of the MLP, each token visiting top_k of them. model.norm, model.mlp
// and model.bias change the block to Llama's parts: RMSNorm (a gain, no bias), a SwiGLU
// MLP (gate and up [F, D] each, down [D, F]), and no biases at all. model.kv_heads
// gives the keys and values fewer heads than the queries (grouped-query attention):
// QKV is [D + 2 Dkv, D] with Dkv = kv_heads * D/heads.
//
// Parameters are split by how tensor parallelism treats them: "sharded" tensors are
// cut across t (QKV and fc by columns, proj by rows, embeddings by vocab), the rest
// (LayerNorms, row-parallel biases, positions, router) are replicated on every t rank.
#pragma once
#include <string>

#include "mini5d/plan/cost/precision.hpp"
#include "mini5d/rules/deck_choices.hpp"

namespace mini5d::plan {

struct ModelDesc {
  std::string name;    // for tables and the emitted deck
  std::string source;  // file it came from (for messages)
  long long vocab = 0, d_model = 0, layers = 0, heads = 0, seq = 0, ffn = 0;
  long long kv_heads = 0;  // model.kv_heads (grouped-query attention); 0: heads
  long long vocab_pad_to = 1;  // model.vocab_pad_to (rules/vocab_padding.hpp): 0 = 128
  long long experts = 0;  // 0 or 1: dense
  long long top_k = 1;
  bool tie_embeddings = false;
  // The block's choices, in the deck's enums (rules/deck_choices.hpp) and its defaults.
  Attention attention = Attention::blockwise;  // model.attention: blockwise | full (one T x T score block)
  Norm norm = Norm::layernorm;                 // model.norm: layernorm | rmsnorm
  Mlp mlp = Mlp::gelu;                         // model.mlp: gelu | swiglu
  bool bias = true;                            // model.bias: every linear's and LayerNorm's bias
  Positions positions = Positions::learned;    // model.positions: learned | rope (rotary, no table)
  double rope_theta = 10000;                   // model.rope_theta (carried to the emitted deck)
  // Dropout probabilities of the framework being planned (Megatron-LM's --hidden-dropout
  // and --attention-dropout; mini5d itself has none). Only whether each is on matters to
  // the planner: its masks are stored for the backward (memory_model.hpp). 0: off.
  double hidden_dropout = 0;     // model.hidden_dropout: after the embedding, projection and MLP
  double attention_dropout = 0;  // model.attention_dropout: on the softmax probabilities
  bool moe() const { return experts > 1; }
  long long kv() const { return kv_heads > 0 ? kv_heads : heads; }
  // Width of the keys (and of the values): kv_heads heads of d_model/heads.
  double kv_width() const { return double(d_model) / double(heads) * double(kv()); }
  // The keys' width on one of t tensor ranks: kv_width/t, or one head's when t > kv_heads
  // (each rank holds the key/value head its query heads read, replicated).
  double local_kv_width(long long t) const {
    return (kv() >= t ? double(kv()) / double(t) : 1.0) * double(d_model) / double(heads);
  }
  // Parameters of the fused QKV's key/value rows one rank holds beyond its 1/t share
  // (t > kv_heads: 2 rows of one head, weights and biases), per block.
  double kv_replicated_params(long long t) const {
    return 2 * (local_kv_width(t) - kv_width() / double(t)) * (double(d_model) + (bias ? 1.0 : 0.0));
  }
  // Those rows' parameters per block on a rank that shares them (0 when t <= kv_heads):
  // their gradients are summed over the t/kv_heads ranks that hold them.
  double kv_shared_params(long long t) const {
    return t > kv() ? 2 * local_kv_width(t) * (double(d_model) + (bias ? 1.0 : 0.0)) : 0.0;
  }
  // The rows the embedding and LM head have at tensor degree t (vocab when t needs no
  // padding): what the runtime allocates and computes.
  long long padded_vocab(long long t) const;
};

// The run: how many sequences per optimizer step and in which precision.
struct TrainDesc {
  long long global_batch = 0;  // sequences per step = micro_batch * accumulation * d * e
  Precision precision = Precision::fp32;
  bool fp32_grad_accum = false;
  // A deck's parallel.grad_reduce_dtype: bf16: the fp32 main gradients go on the
  // data-parallel wire rounded to bf16 (2 bytes each), whatever the buffer holds.
  bool bf16_grad_reduce = false;
};

struct ParamCounts {
  // Per block (one layer); for MoE the MLP counts are per expert.
  double attn_sharded = 0, attn_replicated = 0;  // QKV+proj weights/biases, LN1/LN2
  double mlp_sharded = 0, mlp_replicated = 0;    // one MLP (or one expert)
  double router = 0;                             // MoE only, replicated
  // Outside the blocks.
  double token_embedding = 0, position_embedding = 0, final_norm = 0, head = 0;
  double total = 0;          // every parameter of the model
  double expert_total = 0;   // parameters living in experts (sharded over e)
  double matmul_active = 0;  // weights taking part in a matrix product per token (the N of 6N)
};

// The model's own parameters (no vocabulary padding: what a checkpoint holds).
ParamCounts count_params(const ModelDesc& m);
// As allocated and computed at tensor degree t: the vocabulary padded for t.
ParamCounts count_params(const ModelDesc& m, long long t);

// Rows of the MLP's (or an expert's) first matrix: F, or 2F for SwiGLU's gate and up.
double mlp_fc_rows(const ModelDesc& m);
// Parameters of one norm (d_model, and its bias for a LayerNorm with biases).
double norm_params(const ModelDesc& m);

// Model FLOPs of one optimizer step (forward + backward, no recomputation):
// tokens * (6 * matmul_active + 12 * layers * seq * d_model). The second term is the
// attention core (QK^T and PV over the full T x T square, which mini5d computes).
// The vocabulary is padded for tensor degree t (the runtime computes the padding rows).
double model_flops_per_step(const ModelDesc& m, double tokens, long long t);

}  // namespace mini5d::plan
