// SPDX-License-Identifier: BSD-3-Clause
// Memory model against the seed figure and hand-computed cases.
#include <catch2/catch.hpp>

#include "mini5d/plan/cost/axis_traffic.hpp"
#include "mini5d/plan/cost/compute_model.hpp"
#include "mini5d/plan/cost/memory_model.hpp"
#include "mini5d/plan/inputs/input_files.hpp"
#include "mini5d/rules/attention_tiles.hpp"
#include "plan_test_util.hpp"

using namespace mini5d::plan;

TEST_CASE("400B parameters need 6.4 TB of AdamW training state", "[plan][memory]") {
  // 16 B/param in both fp32 and bf16-with-fp32-master: 400e9 * 16 = 6.4e12 bytes.
  CHECK(zero_state_bytes(400e9, 0, 1, Precision::bf16).total() == Approx(6.4e12));
  CHECK(zero_state_bytes(400e9, 0, 1, Precision::fp32).total() == Approx(6.4e12));
  const ModelInput in = load_model_file(plan_test::input("models/dense-400b.yaml"));
  const double n = count_params(in.model).total;
  CHECK(n == Approx(400e9).epsilon(0.01));
  CHECK(zero_state_bytes(n, 0, 1, in.train.precision).total() == Approx(6.4e12).epsilon(0.01));
}

TEST_CASE("ZeRO stages on a hand-computed case", "[plan][memory]") {
  // 1000 params over a group of 4. bf16: w 2, g 2, master+moments 12.
  //   ZeRO-0 16000; ZeRO-1 2000+2000+12000/4 = 7000; ZeRO-2 2000+14000/4 = 5500;
  //   ZeRO-3 16000/4 = 4000.
  const double bf[4] = {16000, 7000, 5500, 4000};
  // fp32: w 4, g 4, moments 8: 16000, 8000+2000, 4000+12000/4, 4000.
  const double f32[4] = {16000, 10000, 7000, 4000};
  for (int s = 0; s < 4; ++s) {
    CHECK(zero_state_bytes(1000, s, 4, Precision::bf16).total() == Approx(bf[s]));
    CHECK(zero_state_bytes(1000, s, 4, Precision::fp32).total() == Approx(f32[s]));
  }
  const StateBytes z1 = zero_state_bytes(1000, 1, 4, Precision::bf16);
  CHECK(z1.weights == 2000);
  CHECK(z1.grads == 2000);
  CHECK(z1.optimizer == 3000);
  // fp32 gradient accumulation under bf16 makes it 18 B/param.
  CHECK(zero_state_bytes(1000, 0, 4, Precision::bf16, true).total() == Approx(18000));
}

TEST_CASE("parameter counts follow mini5d's tensor list", "[plan][memory]") {
  const ModelInput in = load_model_file(plan_test::data("deck_small.yaml"));
  // deck_small: V 32, D 64, L 2, T 32, F 256. Block: 4D^2 + 2DF + 9D + F = 49984;
  // wte 2048 + wpe 2048 + lnf 128 + lm_head 2048.
  CHECK(count_params(in.model).total == 2 * 49984 + 2048 + 2048 + 128 + 2048);
  Layout l;
  l.t = 2, l.p = 2;
  // Stage 0: one block with t-sharded QKV/proj/fc (16576/2 + 33024/2) and replicated
  // norms and row biases (384), wte/2, wpe; stage 1: one block, lnf, lm_head/2.
  CHECK(stage_params(in.model, l, 0).total() == 8288 + 16512 + 384 + 1024 + 2048);
  CHECK(stage_params(in.model, l, 1).total() == 8288 + 16512 + 384 + 128 + 1024);
}

TEST_CASE("parameter counts and FLOPs with RMSNorm, SwiGLU and no biases", "[plan][memory][llama]") {
  ModelInput in = load_model_file(plan_test::data("deck_small.yaml"));
  in.model.norm = Norm::rmsnorm, in.model.mlp = Mlp::swiglu;
  in.model.bias = false;
  // V 32, D 64, L 2, T 32, F 256. Block: 4D^2 + 3DF (gate, up, down) + 2D (two RMSNorm
  // gains) = 16384 + 49152 + 128 = 65664; wte 2048 + wpe 2048 + lnf 64 + lm_head 2048.
  const ParamCounts c = count_params(in.model);
  CHECK(c.total == 2 * 65664 + 2048 + 2048 + 64 + 2048);
  CHECK(c.matmul_active == 2 * (16384 + 49152) + 2048);
  CHECK(model_flops_per_step(in.model, 1, 1) == 6 * c.matmul_active + 12 * 2 * 32 * 64);
  Layout l;
  l.t = 2, l.p = 2;
  // Stage 0: one block cut over t ((16384 + 49152) / 2) with its gains replicated (128),
  // wte/2, wpe; stage 1: one block, lnf, lm_head/2.
  CHECK(stage_params(in.model, l, 0).total() == 32768 + 128 + 1024 + 2048);
  CHECK(stage_params(in.model, l, 1).total() == 32768 + 128 + 64 + 1024);
  // Each part alone: SwiGLU adds D*F + F (the up weight and bias) per block; RMSNorm drops
  // three norms' biases; bias=false drops 3D + D + F + D of linear biases and the norms'.
  ModelDesc m = in.model;
  m.norm = Norm::layernorm, m.mlp = Mlp::gelu, m.bias = true;
  const double gpt = count_params(m).total;
  m.mlp = Mlp::swiglu;
  CHECK(count_params(m).total == gpt + 2 * (64 * 256 + 256));
  m.mlp = Mlp::gelu, m.norm = Norm::rmsnorm;
  CHECK(count_params(m).total == gpt - (2 * 2 + 1) * 64);
  m.norm = Norm::layernorm, m.bias = false;
  CHECK(count_params(m).total == gpt - 2 * (3 * 64 + 64 + 256 + 64 + 2 * 64) - 64);
}

TEST_CASE("rotary positions: no position table, a cos and sin table in the work buffers", "[plan][memory][rope]") {
  ModelInput in = load_model_file(plan_test::data("deck_small.yaml"));
  const double learned = count_params(in.model).total;
  Layout l;
  l.t = 2, l.p = 2;
  const double stage0 = stage_params(in.model, l, 0).total(), stage1 = stage_params(in.model, l, 1).total();
  in.model.positions = Positions::rope;
  // deck_small: T 32, D 64: wpe (2048) goes, on the first stage only.
  CHECK(count_params(in.model).position_embedding == 0);
  CHECK(count_params(in.model).total == learned - 32 * 64);
  CHECK(stage_params(in.model, l, 0).total() == stage0 - 2048);
  CHECK(stage_params(in.model, l, 1).total() == stage1);
  // The work buffers gain cos and sin of the rank's T/c positions, hd/2 each: at
  // T 8, d 16, h 4 (hd 4), 8 x 4 floats at c = 1, 4 x 4 at c = 2.
  ActShape s;
  s.micro_batch = 2, s.seq = 8, s.d_model = 16, s.heads = 4, s.ffn = 64, s.vocab = 32;
  const double w = workspace_bytes(s, Recompute::none);
  s.rope = true;
  CHECK(workspace_bytes(s, Recompute::none) == w + 8 * 4 * 4);
  s.c = 2;
  const double w2 = workspace_bytes(s, Recompute::none);
  s.rope = false;
  CHECK(w2 == workspace_bytes(s, Recompute::none) + 4 * 4 * 4);
}

TEST_CASE("activation bytes of one block with RMSNorm and SwiGLU", "[plan][memory][llama]") {
  // The hand-computed case below (22784 bytes, full attention) with one statistic per
  // norm row instead of two (-32 floats) and gate|up [16, 128] for fc (+1024 floats):
  // 6688 floats.
  ActShape s;
  s.micro_batch = 2, s.seq = 8, s.d_model = 16, s.heads = 4, s.ffn = 64, s.vocab = 32;
  s.blockwise = false;
  s.rmsnorm = s.swiglu = true;
  CHECK(block_activation_bytes(s, Recompute::none) == 6688 * 4);
  CHECK(block_activation_bytes(s, Recompute::full) == 1024);
  // final norm 256 + rstd 16 + logits 512 = 784 floats.
  CHECK(head_activation_bytes(s) == 784 * 4);
}

TEST_CASE("activation bytes of one block on a hand-computed case", "[plan][memory]") {
  // B=2, T=8 (N=16 tokens), d=16, h=4, f=64, V=32, fp32. What Gpt keeps per block:
  //   ln1 256, ln1 mean/rstd 32, qkv 768, q/k/v 768, probs 2*4*8*8 = 512, y 256,
  //   att_merged 256, res2 256, ln2 256, ln2 mean/rstd 32, fc 1024, gelu 1024, res3 256
  //   = 5696 floats = 22784 bytes (full attention: model.attention=full).
  ActShape s;
  s.micro_batch = 2, s.seq = 8, s.d_model = 16, s.heads = 4, s.ffn = 64, s.vocab = 32;
  s.blockwise = false;
  CHECK(block_activation_bytes(s, Recompute::none) == 22784);
  // selective drops q, k, v, y (1024) and probs (512): 4160 floats.
  CHECK(block_activation_bytes(s, Recompute::selective) == 16640);
  // full keeps only the block output: 256 floats.
  CHECK(block_activation_bytes(s, Recompute::full) == 1024);
  // final LN 256 + stats 32 + logits 16*32 = 800 floats; embedding output 256.
  CHECK(head_activation_bytes(s) == 3200);
  CHECK(embedding_activation_bytes(s) == 1024);

  // t=2 without SP: ln1/res2/ln2/res3 (1024) and stats (64) stay whole, the rest halves:
  // qkv+att_merged 512, fc+gelu 1024, q/k/v/y 512, probs 256 = 3392 floats.
  s.t = 2;
  CHECK(block_activation_bytes(s, Recompute::none) == 3392 * 4);
  // with SP the replicated ones are split over t too: 512 + 32 + 512 + 1024 + 768 = 2848.
  s.sp = true;
  CHECK(block_activation_bytes(s, Recompute::none) == 2848 * 4);
  // c=2 alone: 8 local tokens; ring attention keeps one log-sum-exp per query row
  // (2 x 4 heads x 4 rows) instead of probabilities: 2080 + 512 + 32 = 2624.
  s.t = 1, s.sp = false, s.c = 2;
  CHECK(block_activation_bytes(s, Recompute::none) == 2624 * 4);
  // Blockwise at c = 1 keeps a log-sum-exp per query row too: 5696 - 512 + 64 = 5248
  // floats; selective drops q, k, v, y (1024) and the lse (64): 4160 floats, as with
  // full attention (what selective keeps does not depend on the core).
  s.c = 1, s.blockwise = true;
  CHECK(block_activation_bytes(s, Recompute::none) == 5248 * 4);
  CHECK(block_activation_bytes(s, Recompute::selective) == 16640);
}

TEST_CASE("blockwise attention: no seq x seq term in the activations or the work buffers", "[plan][memory]") {
  // A long-sequence case: B = 1, T = 32768, 32 heads, d 4096, bf16 activations (2 bytes);
  // the statistics (log-sum-exps, the blockwise tiles' scores and sums) are fp32 (4).
  ActShape s;
  s.micro_batch = 1, s.seq = 32768, s.d_model = 4096, s.heads = 32, s.ffn = 16384, s.vocab = 50257;
  s.elem_bytes = 2;
  const double BH = 32, T = 32768, a = 2, st = 4, tile = mini5d::rules::kAttentionTile, panel = mini5d::rules::kAttentionKeyPanel;
  ActShape full = s;
  full.blockwise = false;
  // What the core keeps besides q, k, v, y: B*H*T*T probabilities, or B*H*T lse.
  CHECK(attention_prob_elems(full) == BH * T * T);
  CHECK(attention_prob_elems(s) == BH * T);
  // The attention-probability bytes: B*H*T^2*a (64 GiB a block) in full, 0 in blockwise.
  const double probs = a * BH * T * T;
  CHECK(probs == 64.0 * (1 << 30));
  for (const Recompute r : {Recompute::none, Recompute::selective}) {
    const double kept_diff = block_activation_bytes(full, r) - block_activation_bytes(s, r);
    CHECK(kept_diff == (r == Recompute::none ? probs - st * BH * T : 0.0));
  }
  // The work buffers: full's dP [B*H, T, T] against two 64 x 512 panels and a row sum.
  CHECK(workspace_bytes(full, Recompute::none) - workspace_bytes(s, Recompute::none) ==
        probs - st * (2 * BH * tile * panel + BH * T));
  // No T^2 anywhere: doubling T doubles blockwise's kept bytes exactly (full's grow by
  // the extra 3*B*H*T^2 probabilities), and its work buffers but for the fixed panels.
  ActShape s2 = s, full2 = full;
  s2.seq = full2.seq = 2 * T;
  CHECK(block_activation_bytes(s2, Recompute::none) == 2 * block_activation_bytes(s, Recompute::none));
  CHECK(workspace_bytes(s2, Recompute::none) ==
        2 * workspace_bytes(s, Recompute::none) - st * 2 * BH * tile * panel);
  CHECK(block_activation_bytes(full2, Recompute::none) - 2 * block_activation_bytes(full, Recompute::none) ==
        2 * probs);
}

TEST_CASE("model.attention in a model file: blockwise by default, full on request", "[plan][memory]") {
  ModelInput in = load_model_file(plan_test::data("deck_small.yaml"));
  CHECK(in.model.attention == Attention::blockwise);
  Layout l;
  CHECK(act_shape(in.model, l, Precision::fp32).blockwise);
  in.model.attention = Attention::full;
  CHECK_FALSE(act_shape(in.model, l, Precision::fp32).blockwise);
}

TEST_CASE("in-flight micro-batches per schedule", "[plan][memory]") {
  CHECK(in_flight_microbatches(Schedule::gpipe, 4, 8, 1, 0) == 8);
  CHECK(in_flight_microbatches(Schedule::one_f_one_b, 4, 8, 1, 0) == 4);
  CHECK(in_flight_microbatches(Schedule::one_f_one_b, 4, 8, 1, 3) == 1);
  CHECK(in_flight_microbatches(Schedule::one_f_one_b, 4, 2, 1, 0) == 2);
  // Interleaved, v=2: 2(p-1) + (v-1)p + 1 = 11 chunks of half a stage = p + (p-1)/v.
  CHECK(in_flight_microbatches(Schedule::interleaved, 4, 8, 2, 0) == Approx(5.5));
}

TEST_CASE("device memory adds the categories of the fullest stage", "[plan][memory]") {
  const ModelInput in = load_model_file(plan_test::data("deck_small.yaml"));
  const ClusterDesc cl = plan_test::toy_cluster(1, 4, 1);
  Layout l;
  l.d = 2, l.p = 2, l.micro_batch = 4, l.accumulation = 2, l.zero = 1;
  const MemoryBreakdown m = device_memory(in.model, in.train, cl, l, {});
  const ShardParams sp = stage_params(in.model, l, m.stage);
  CHECK(m.weights == 4 * sp.dense);
  CHECK(m.optimizer == 8 * sp.dense / 2);  // ZeRO-1 over d=2
  CHECK(m.total() == Approx(m.weights + m.grads + m.optimizer + m.activations + m.workspace +
                            m.comm_buffers + m.reserved));
}

TEST_CASE("grouped-query attention: parameters, FLOPs, activations and ring bytes by hand", "[plan][memory][gqa]") {
  ModelInput in = load_model_file(plan_test::data("deck_small.yaml"));
  const ModelDesc mha = in.model;
  ModelDesc m = mha;
  m.kv_heads = 1;  // 4 query heads of 16 share one key/value head: Dkv = 16
  // V 32, D 64, L 2, T 32, F 256. QKV: [D + 2 Dkv, D] = 96 x 64 = 6144 weights and 96
  // biases, against 3D x D = 12288 and 192: 6240 fewer per block.
  const ParamCounts c = count_params(m), c0 = count_params(mha);
  CHECK(c.attn_sharded == 6144 + 96 + 4096);
  CHECK(c.total == c0.total - 2 * 6240);
  // Matrix weights per token: (QKV 6144 + proj 4096 + fc 16384 + proj 16384) per block,
  // and the LM head 2048.
  CHECK(c.matmul_active == 2 * (6144 + 4096 + 2 * 16384) + 2048);
  // The attention core's products (12 L T D per token) are the queries': unchanged.
  CHECK(model_flops_per_step(m, 1, 1) == 6 * c.matmul_active + 12 * 2 * 32 * 64);
  // The QKV GEMM of one micro-batch of 1 sequence (N = 32) is 32 x 64 . 64 x 96.
  Layout l;
  const SoftwareDesc sw;
  const BlockGemmCalls g = block_gemm_calls(m, l, sw, 1);
  CHECK(g.linear_fwd.at(0).m == 32);
  CHECK(g.linear_fwd.at(0).n == 96);
  CHECK(g.linear_fwd.at(0).k == 64);

  // Ring attention at c = 2 (micro-batch 1, fp32): each hop carries K and V of the one
  // key/value head, 2 x 16 local tokens x 16 x 4 bytes = 2048, 3 (c - 1) hops per block
  // (K/V forward, K/V and dK/dV backward), 2 blocks: 12288 bytes, a quarter of
  // multi-head attention's.
  l.c = 2;
  CHECK(step_traffic(m, l, 0, 1, 0, 0).cp_activations == 12288);
  CHECK(step_traffic(mha, l, 0, 1, 0, 0).cp_activations == 4 * 12288);
  // ... and at t = 2 with 2 key/value heads, each rank's one of them: the same 12288.
  m.kv_heads = 2;
  l.t = 2;
  CHECK(step_traffic(m, l, 0, 1, 0, 0).cp_activations == 12288);

  // t = 2 over one key/value head: each rank holds it whole (replicated), QKV [32 + 32,
  // 64] and 64 biases per rank instead of 96 x 64 / 2 and 48; the gradient of its 2 x 16
  // rows, 32 x (64 + 1) = 2080 parameters per block, is summed over both ranks: 8320
  // bytes per block on t (without sequence parallelism nothing else is).
  m.kv_heads = 1;
  l.c = 1, l.sp = false;
  CHECK(block_params(m, l).dense == (32 + 32) * 64 + 64 + 4096 / 2 + 2 * 16384 / 2 + 256 / 2 + 64 + 64 + 4 * 64);
  CHECK(step_traffic(m, l, 0, 1, 0, 0).tp_grads == 2 * 8320);

  // Activations: the hand-computed block below (full attention, 5696 floats) with one
  // key/value head of 4: qkv [16, 16 + 2 x 4] = 384 instead of 768, and k, v [16, 4]
  // each (128) instead of 512: 4928 floats; selective drops q, y, k, v (640) and probs.
  ActShape s;
  s.micro_batch = 2, s.seq = 8, s.d_model = 16, s.heads = 4, s.ffn = 64, s.vocab = 32;
  s.blockwise = false;
  s.kv_ratio = 0.25;
  CHECK(block_activation_bytes(s, Recompute::none) == 4928 * 4);
  CHECK(block_activation_bytes(s, Recompute::selective) == (4928 - 640 - 512) * 4);
}

TEST_CASE("the shipped Llama 3 model files count the published parameters within 1%", "[plan][memory][gqa]") {
  // Published totals (Dubey et al. 2024, table 3 and the model cards): 8.03B, 70.6B,
  // 405B. The hand count of the 8B: embedding and head 2 x 128256 x 4096 = 1050.67M;
  // per block 4096 x (4096 + 2 x 1024) + 4096^2 (attention) + 3 x 4096 x 14336 (SwiGLU)
  // + 2 x 4096 (RMSNorm gains) = 218.11M, x 32; plus the final norm: 8030.26M.
  const struct {
    const char* file;
    double published;
  } shipped[] = {{"models/llama3-8b.yaml", 8.03e9}, {"models/llama3-70b.yaml", 70.6e9}, {"models/llama3-405b.yaml", 405e9}};
  for (const auto& s : shipped) {
    const ModelInput in = load_model_file(plan_test::input(s.file));
    const double n = count_params(in.model).total;
    INFO(s.file << ": " << n << " parameters, published " << s.published);
    CHECK(n == Approx(s.published).epsilon(0.01));
    CHECK(in.model.kv_heads == 8);
    CHECK(in.model.positions == Positions::rope);
  }
  const ModelInput eight = load_model_file(plan_test::input("models/llama3-8b.yaml"));
  CHECK(count_params(eight.model).total == 8030261248.0);
}

TEST_CASE("dropout's stored masks against Korthikanti et al. 2022 (GPT-3 175B)", "[plan][memory][dropout]") {
  // Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer
  // Models", section 4.1: one layer without recomputation, 16-bit activations, 1-byte
  // dropout masks, keeps s*b*h*(34 + 5*a*s/h) bytes, of which dropout's are
  //   2*s*b*h   the hidden masks after the attention projection and after the MLP,
  //   a*s^2*b   the attention mask, and 2*a*s^2*b the dropped probabilities PV reads.
  // GPT-3 175B: s 2048, b 1, h 12288, a 96 heads, f 4h, t 1 (5as/h = 80).
  const double s = 2048, b = 1, h = 12288, a = 96;
  const double sbh = s * b * h, as2b = a * s * s * b;
  ActShape off;
  off.micro_batch = b, off.seq = s, off.d_model = h, off.heads = a, off.ffn = 4 * h, off.vocab = 51200;
  off.elem_bytes = 2;
  off.blockwise = false;  // the paper's core stores the probabilities
  ActShape on = off;
  on.hidden_dropout = on.attention_dropout = true;

  // The terms the formula defines, exactly.
  CHECK(hidden_dropout_bytes(on) == 2 * sbh);
  CHECK(attention_dropout_bytes(on) == 3 * as2b);
  CHECK(block_activation_bytes(on, Recompute::none) - block_activation_bytes(off, Recompute::none) ==
        2 * sbh + 3 * as2b);
  // The whole layer: the paper's figure plus what mini5d's block keeps beyond Megatron's
  // (docs/planner.md, "Activations — derivation"): the head-major copies of q, k, v and
  // y beside qkv and att_merged, 4 elements of 2 bytes per row of h (8sbh), and the two
  // norms' mean and rstd, 4 fp32 values per token (16sb), which the paper leaves out.
  const double megatron = sbh * (34 + 5 * a * s / h);
  CHECK(megatron == 114 * sbh);
  CHECK(block_activation_bytes(on, Recompute::none) == megatron + 8 * sbh + 16 * s * b);
  // Selective recomputation (the paper's: the attention core rebuilt, 34sbh) drops the
  // same copies and every a*s^2*b term, the attention dropout's with them.
  CHECK(block_activation_bytes(on, Recompute::selective) == 34 * sbh + 16 * s * b);
  // Full recomputation keeps the layer's input only, masks none.
  CHECK(block_activation_bytes(on, Recompute::full) == block_activation_bytes(off, Recompute::full));

  // t = 8 with sequence parallelism: the paper's sbh/t (34 + 5as/h); without it
  // sbh (10 + 24/t + 5as/(ht)), the hidden masks among the 10 (replicated over t).
  const double t = 8;
  ActShape sp = on;
  sp.t = 8, sp.sp = true;
  CHECK(block_activation_bytes(sp, Recompute::none) == (megatron + 8 * sbh + 16 * s * b) / t);
  ActShape nosp = on;
  nosp.t = 8;
  CHECK(hidden_dropout_bytes(nosp) == 2 * sbh);
  CHECK(block_activation_bytes(nosp, Recompute::none) ==
        sbh * (10 + 24 / t + 5 * a * s / (h * t)) + 8 * sbh / t + 16 * s * b);

  // Blockwise (and ring) attention keep no probabilities and rebuild the mask from the
  // generator's state: attention dropout stores nothing; the hidden masks remain.
  ActShape flash = on;
  flash.blockwise = true;
  CHECK(attention_dropout_bytes(flash) == 0);
  ActShape flash_off = off;
  flash_off.blockwise = true;
  CHECK(block_activation_bytes(flash, Recompute::none) - block_activation_bytes(flash_off, Recompute::none) ==
        2 * sbh);
  // The embedding's dropout mask (section 4.3), one byte per element of its output.
  CHECK(embedding_activation_bytes(on) - embedding_activation_bytes(off) == sbh);
}

TEST_CASE("model.hidden_dropout and model.attention_dropout: off by default", "[plan][memory][dropout]") {
  const std::string base = "model: {vocab: 64, d_model: 16, layers: 2, heads: 4, seq: 8, ffn: 64";
  const ModelInput plain = parse_model_text(base + "}\n", "m.yaml");
  CHECK(plain.model.hidden_dropout == 0);
  CHECK(plain.model.attention_dropout == 0);
  Layout l;
  CHECK_FALSE(act_shape(plain.model, l, Precision::fp32).hidden_dropout);
  CHECK_FALSE(act_shape(plain.model, l, Precision::fp32).attention_dropout);
  const ModelInput drop =
      parse_model_text(base + ", hidden_dropout: 0.1, attention_dropout: 0.1}\n", "m.yaml");
  CHECK(act_shape(drop.model, l, Precision::fp32).hidden_dropout);
  CHECK(act_shape(drop.model, l, Precision::fp32).attention_dropout);
  CHECK_THROWS_WITH(parse_model_text(base + ", hidden_dropout: 1}\n", "m.yaml"),
                    Catch::Contains("model.hidden_dropout: 1 is out of range"));
}

TEST_CASE("asynchronous checkpoint staging: the buffers the save writes from", "[plan][memory]") {
  // 1000 params over a group of 4. fp32: weights whole until ZeRO 3, moments sharded
  // from ZeRO 1: 4000+8000, 4000+2000, 4000+2000, 1000+2000.
  const double f32[4] = {12000, 6000, 6000, 3000};
  // bf16: the master copy is sharded with the moments from ZeRO 1.
  const double bf[4] = {12000, 3000, 3000, 3000};
  for (int s = 0; s < 4; ++s) {
    CHECK(checkpoint_staging_bytes(1000, s, 4, Precision::fp32) == Approx(f32[s]));
    CHECK(checkpoint_staging_bytes(1000, s, 4, Precision::bf16) == Approx(bf[s]));
  }
}
