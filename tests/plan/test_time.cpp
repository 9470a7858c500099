// SPDX-License-Identifier: BSD-3-Clause
// Communication formulas, tier placement and the step-time composition.
#include <algorithm>
#include <catch2/catch.hpp>

#include "mini5d/plan/cost/comm_model.hpp"
#include "mini5d/plan/cost/compute_model.hpp"
#include "mini5d/plan/inputs/input_files.hpp"
#include "mini5d/plan/cost/layout.hpp"
#include "mini5d/plan/cost/memory_model.hpp"
#include "mini5d/plan/search/search.hpp"
#include "mini5d/plan/cost/time_model.hpp"
#include "plan_test_util.hpp"

using namespace mini5d::plan;

TEST_CASE("collective volume factors and times", "[plan][comm]") {
  CHECK(allreduce_factor(4) == Approx(1.5));
  CHECK(allgather_factor(4) == Approx(0.75));
  CHECK(allreduce_factor(1) == 0);
  LinkTier link;
  link.bandwidth = 100e9, link.latency = 1e-6;
  // 2(n-1) latencies + 2(n-1)/n * S / B
  CHECK(allreduce_time(1e9, 4, link) == Approx(6e-6 + 1.5 * 1e9 / 100e9));
  CHECK(allgather_time(1e9, 4, link) == Approx(3e-6 + 0.75 * 1e9 / 100e9));
  CHECK(reduce_scatter_time(1e9, 4, link) == Approx(allgather_time(1e9, 4, link)));
  CHECK(alltoall_time(1e9, 4, link) == Approx(3e-6 + 0.75 * 1e9 / 100e9));
  CHECK(send_time(1e9, link) == Approx(1e-6 + 1e-2));
  // DP moves exactly the gradient bytes.
  CHECK(dp_reduction_bytes(1e6, Precision::fp32) == 4e6);
  CHECK(dp_reduction_bytes(1e6, Precision::bf16) == 2e6);
}

TEST_CASE("bandwidth curve interpolates in log(size)", "[plan][comm]") {
  const ClusterDesc cl = load_cluster_file(plan_test::input("clusters/cpu-2core.yaml"));
  const LinkTier& shm = cl.tiers.front();
  CHECK(shm.bandwidth_at(1 << 20) == Approx(7e9));
  CHECK(shm.bandwidth_at(64 << 20) == Approx(1.8e9));
  CHECK(shm.bandwidth_at(8 << 20) == Approx(7e9 - 0.5 * (7e9 - 1.8e9)));  // half way in log2
  CHECK(shm.bandwidth_at(1024) == Approx(7e9));
}

TEST_CASE("axes land on the tier their rank stride implies", "[plan][comm]") {
  const ClusterDesc cl = plan_test::toy_cluster(4, 8, 80);  // 32 devices
  Layout l;
  l.t = 8, l.d = 4;
  CHECK(axis_tier(cl, l, Axis::t) == 0);   // consecutive ranks: one node
  CHECK(axis_tier(cl, l, Axis::d) == 1);   // stride 8: one per node
  CHECK(axis_tier(cl, l, Axis::p) == -1);  // degree 1: no traffic
  l = Layout{};
  l.t = 2, l.p = 4, l.d = 4;
  CHECK(axis_tier(cl, l, Axis::p) == 0);  // stride 2 x 4 = 8 ranks: still one node
  CHECK(axis_tier(cl, l, Axis::d) == 1);
  l = Layout{};
  l.d = 2, l.t = 16;  // a tensor group over two nodes lands on the slow tier
  CHECK(axis_tier(cl, l, Axis::t) == 1);
  l = Layout{};
  l.c = 2, l.e = 2, l.t = 2, l.d = 4;
  CHECK(axis_tier(cl, l, Axis::c) == 0);  // stride 4, extent 8
  CHECK(gradient_group_tier(cl, l) == 1);  // d crosses nodes
}

TEST_CASE("cyclic mapping deals ranks round-robin: stride-1 groups cross nodes", "[plan][comm]") {
  // 2 nodes of 2 (the two-tier test cluster): rank r on node r mod 2.
  const ClusterDesc cl = plan_test::toy_cluster(2, 2, 80);
  Layout l;
  l.t = 2, l.d = 2;
  l.mapping = Mapping::cyclic;
  CHECK(axis_tier(cl, l, Axis::t) == 1);  // ranks {0, 1}: nodes 0 and 1
  CHECK(axis_tier(cl, l, Axis::d) == 0);  // ranks {0, 2}: both on node 0
  CHECK(gradient_group_tier(cl, l) == 0);
  l.mapping = Mapping::block;  // the same layout in blocks: the other way round
  CHECK(axis_tier(cl, l, Axis::t) == 0);
  CHECK(axis_tier(cl, l, Axis::d) == 1);
  // 4 nodes of 4, cyclic: a member k*stride away shares r0's node only when 4 divides
  // the stride: p (stride 2) crosses, d (stride 4) stays, e (stride 1) crosses.
  const ClusterDesc big = plan_test::toy_cluster(4, 4, 80);
  Layout m;
  m.e = 2, m.p = 2, m.d = 4;
  m.mapping = Mapping::cyclic;
  CHECK(axis_tier(big, m, Axis::e) == 1);
  CHECK(axis_tier(big, m, Axis::p) == 1);
  CHECK(axis_tier(big, m, Axis::d) == 0);
  CHECK(axis_tier(big, m, Axis::c) == -1);
  // One node: nothing to cross whatever the mapping.
  const ClusterDesc one = plan_test::toy_cluster(1, 4, 80);
  Layout o;
  o.t = 2, o.d = 2;
  o.mapping = Mapping::cyclic;
  CHECK(axis_tier(one, o, Axis::t) == 0);
}

TEST_CASE("cyclic t costs its all-reduces on the slow link and is refused without leave", "[plan][time]") {
  const ModelInput in = load_model_file(plan_test::data("deck_small.yaml"));
  TrainDesc tr = in.train;
  tr.global_batch = 16;
  const ClusterDesc cl = plan_test::toy_cluster(2, 2, 80, 100, 1);  // a link 100x slower
  Layout l;
  l.t = 2, l.d = 2, l.sp = true, l.micro_batch = 8, l.accumulation = 1;
  const Plan block = evaluate(in.model, tr, cl, l, {});
  l.mapping = Mapping::cyclic;
  CHECK(check_layout(in.model, tr, cl, l).size() == 1);  // tensor groups across nodes
  RuleOptions across;
  across.allow_cross_node_tp = true;
  CHECK(check_layout(in.model, tr, cl, l, across).empty());
  const Plan cyclic = evaluate(in.model, tr, cl, l, {});
  // Same compute and bytes; t's traffic moves to the slow tier and d's to the fast one.
  CHECK(cyclic.time.compute == Approx(block.time.compute));
  CHECK(cyclic.time.tp_total > 10 * block.time.tp_total);
  CHECK(cyclic.time.dp_total < block.time.dp_total);
  CHECK(cyclic.time.step > block.time.step);
}

TEST_CASE("step time composes compute, exposed communication and the bubble", "[plan][time]") {
  const ModelInput in = load_model_file(plan_test::data("deck_small.yaml"));
  ModelDesc m = in.model;
  m.layers = 8;
  TrainDesc tr = in.train;
  tr.global_batch = 16;
  const ClusterDesc cl = plan_test::toy_cluster(1, 4, 80);
  Layout l;
  l.p = 4, l.micro_batch = 2, l.accumulation = 8;
  TimeOptions o;
  const TimeBreakdown t = step_time(m, tr, cl, l, o);
  const double t_mb = (t.compute + t.tp + t.pp + t.cp + t.ep + t.zero3) / 8;
  // The last stage runs the head too: it sets the pace, and the others idle (p-1)
  // micro-batch slots of their own time, (m + p - 1) c + m h in all.
  REQUIRE(t.stage_mb.size() == 4);
  CHECK(t.stage_mb[3] == Approx(t_mb));
  CHECK(t.stage_mb[1] == Approx(t.stage_mb[0]));
  CHECK(t.stage_mb[2] == Approx(t.stage_mb[0]));
  CHECK(t.stage_mb[0] < t_mb);
  CHECK(t.bubble == Approx(3 * t.stage_mb[0]));
  CHECK(t.bubble < 3 * t_mb);  // the formula with the slowest stage's slot overstates it
  CHECK(t.step == Approx(8 * t_mb + t.bubble + t.dp + t.optimizer));
  CHECK(t.dp == 0);  // d=1: nothing to reduce
  CHECK(t.tp == 0);
  CHECK(t.pp > 0);
  // Interleaving by 2 halves the bubble: (p-1)/v slots of the lighter stages.
  l.virtual_stages = 2, l.schedule = Schedule::interleaved;
  const TimeBreakdown ti = step_time(m, tr, cl, l, o);
  CHECK(ti.bubble == Approx(1.5 * ti.stage_mb[0]));
  // An uneven split, 3 + 5 blocks at p = 2: stage 1 (5 blocks and the head) sets the
  // pace, and 1F1B idles it only for stage 0's first forward and last backward, so the
  // bubble is stage 0's time per micro-batch (the schedule's replay, not the formula's
  // t_mb, nor (m + p - 1) max).
  Layout u;
  u.p = 2, u.d = 2, u.micro_batch = 2, u.accumulation = 4;
  u.stage_layers.counts = {3, 5};
  const TimeBreakdown tu = step_time(m, tr, plan_test::toy_cluster(1, 4, 80), u, o);
  REQUIRE(tu.stage_mb.size() == 2);
  CHECK(tu.stage_mb[1] > 5.0 / 3 * tu.stage_mb[0]);
  CHECK(tu.bubble == Approx(tu.stage_mb[0]));
  CHECK_FALSE(tu.bubble_estimated);
  // Model FLOPs: tokens * (6 * matmul params + 12 L T d).
  const double tokens = 16.0 * 32;
  const double N = 8 * (4.0 * 64 * 64 + 2.0 * 64 * 256) + 32.0 * 64;
  CHECK(t.model_flops == Approx(tokens * (6 * N + 12.0 * 8 * 32 * 64)));
  CHECK(t.mfu == Approx(t.model_flops / t.step / (4 * 100e12)));
}

TEST_CASE("tied embeddings: the pipeline ends' all-reduce of the embedding's gradient, once a step, exposed",
          "[plan][time]") {
  const ModelInput in = load_model_file(plan_test::data("deck_small.yaml"));
  ModelDesc m = in.model;
  m.layers = 8;
  TrainDesc tr = in.train;
  tr.global_batch = 16;
  const ClusterDesc cl = plan_test::toy_cluster(1, 4, 80);
  Layout l;
  l.p = 4, l.micro_batch = 2, l.accumulation = 8;
  ModelDesc tied = m;
  tied.tie_embeddings = true;
  const TimeBreakdown u = step_time(m, tr, cl, l, {}), t = step_time(tied, tr, cl, l, {});
  const double bytes = 4.0 * double(m.padded_vocab(1)) * double(m.d_model);
  const double tie = allreduce_time(bytes, 2, cl.tiers[std::size_t(axis_tier(cl, l, Axis::p))]);
  CHECK(tie > 0);
  CHECK(t.pp - u.pp == Approx(tie));
  CHECK(t.pp_total - u.pp_total == Approx(tie));
  // The untied head's compute stays (the head multiplies by wte), the all-reduce adds.
  CHECK(t.step - u.step == Approx(tie));
  // One stage: nothing to sum.
  l.p = 1;
  CHECK(step_time(tied, tr, cl, l, {}).pp == 0);
  // The runtime ties at ZeRO 0-1 only: no plan beyond.
  l.d = 4, l.p = 1, l.zero = 2, l.micro_batch = 1, l.accumulation = 4;
  const auto why = check_layout(tied, tr, cl, l);
  CHECK(std::find(why.begin(), why.end(), "model.tie_embeddings=true runs with ZeRO 0 or 1 only") != why.end());
  CHECK(check_layout(m, tr, cl, l).empty());
  l.zero = 1;
  CHECK(check_layout(tied, tr, cl, l).empty());
}

TEST_CASE("recomputation costs compute and TP all-reduces", "[plan][time]") {
  const ModelInput in = load_model_file(plan_test::data("deck_small.yaml"));
  TrainDesc tr = in.train;
  tr.global_batch = 8;
  const ClusterDesc cl = plan_test::toy_cluster(1, 4, 80);
  Layout l;
  l.t = 4, l.micro_batch = 8, l.sp = true;
  const TimeBreakdown none = step_time(in.model, tr, cl, l, {});
  l.recompute = Recompute::selective;
  const TimeBreakdown sel = step_time(in.model, tr, cl, l, {});
  l.recompute = Recompute::full;
  const TimeBreakdown full = step_time(in.model, tr, cl, l, {});
  CHECK(sel.recompute > 0);
  CHECK(full.recompute > sel.recompute);
  CHECK(sel.tp == Approx(none.tp));
  CHECK(full.tp > none.tp);  // the recomputed forward all-reduces again
  CHECK(none.step < sel.step);
  CHECK(sel.step < full.step);
}

TEST_CASE("MoE imbalance slows the expert layers", "[plan][time]") {
  const ModelInput in = load_model_file(plan_test::input("models/moe-8x2b.yaml"));
  const ClusterDesc cl = load_cluster_file(plan_test::input("clusters/h100-sxm-8.yaml"));
  TrainDesc tr = in.train;
  tr.global_batch = 64;
  Layout l;
  l.d = 8, l.e = 8, l.micro_batch = 1, l.accumulation = 1;
  ClusterDesc one = cl;
  one.nodes = 8;
  TimeOptions o;
  o.moe_imbalance = 1.0;
  const TimeBreakdown even = step_time(in.model, tr, one, l, o);
  o.moe_imbalance = 1.5;
  const TimeBreakdown skew = step_time(in.model, tr, one, l, o);
  o.moe_imbalance = 2.0;
  const TimeBreakdown skew2 = step_time(in.model, tr, one, l, o);
  CHECK(even.ep > 0);
  CHECK(skew.ep > even.ep);
  // The all-to-all volume grows linearly with the busiest expert's share.
  CHECK(skew2.ep - skew.ep == Approx(skew.ep - even.ep));
  CHECK(skew.compute > even.compute);
}

TEST_CASE("DP traffic per ZeRO stage is what the runtime moves", "[plan][time]") {
  // parallel/dp/zero_optimizer.hpp: ZeRO 0 and 1 all-reduce the whole gradient once per step
  // (ZeRO-1 keeps the full gradient buffer, only the moments are sharded); ZeRO-2
  // reduce-scatters every micro-batch; ZeRO 1 and 2 all-gather the updated weights.
  const ModelInput in = load_model_file(plan_test::data("deck_small.yaml"));
  TrainDesc tr = in.train;
  tr.global_batch = 16;
  const ClusterDesc cl = plan_test::toy_cluster(1, 4, 80);
  Layout l;
  l.d = 4, l.micro_batch = 2, l.accumulation = 2;
  const double P = stage_params(in.model, l, 0).total();
  const StateBytesPerParam pb = state_bytes_per_param(tr.precision, tr.fp32_grad_accum);
  const double g = dp_reduction_bytes(P, tr.precision, tr.fp32_grad_accum), w = P * pb.weight;
  const LinkTier& link = cl.tiers.front();
  TimeOptions o;
  auto total = [&](int zero) {
    l.zero = zero;
    return step_time(in.model, tr, cl, l, o).dp_total;
  };
  CHECK(total(0) == Approx(allreduce_time(g, 4, link)));
  CHECK(total(1) == Approx(allreduce_time(g, 4, link) + allgather_time(w, 4, link)));
  CHECK(total(2) == Approx(2 * reduce_scatter_time(g, 4, link) + allgather_time(w, 4, link)));
  // ZeRO-1 keeps the whole gradient: 4 bytes per parameter, not 4/G; no comm buffers
  // at ZeRO 0-1 (the reduction runs in place), two block-sized ones from ZeRO 2 on.
  const MemoryOptions mo;
  l.zero = 1;
  CHECK(stage_memory(in.model, tr, cl, l, 0, mo).grads == Approx(P * pb.grad));
  CHECK(comm_buffer_bytes(in.model, l, tr.precision, mo) == 0);
  l.zero = 2;
  const double block = block_params(in.model, l).total();
  CHECK(comm_buffer_bytes(in.model, l, tr.precision, mo) == Approx(2 * block * pb.grad * (1 + 1.0 / 4)));
}

TEST_CASE("RoPE's traffic: q and k turned forward, dq and dk backward", "[plan][time][llama]") {
  // llama-tiny (D 64, 4 heads of 16, 2 K/V heads), micro-batch 2 at c2: N = 2 x 16 = 32
  // local rows, fp32. Each way reads and writes q [N, D/t] and k [N, D_kv/t]:
  //   t2: D_kv/t = 16 columns, 2 x 4 x 32 x (32 + 16) = 12288 bytes;
  //   t4: 4 K/V columns per rank would split a head, so each rank holds one whole K/V head
  //       (16 columns, replicated): 2 x 4 x 32 x (16 + 16) = 8192 bytes.
  const ModelInput in = load_model_file(plan_test::input("llama-tiny.yaml"));
  REQUIRE(in.model.positions == Positions::rope);
  TrainDesc tr = in.train;
  tr.precision = Precision::fp32;
  const ClusterDesc cl = plan_test::toy_cluster(1, 8, 80);
  ModelDesc learned = in.model;
  learned.positions = Positions::learned;
  for (const auto& [t, want] : {std::pair{2, 12288.0}, std::pair{4, 8192.0}}) {
    Layout l;
    l.t = t, l.c = 2, l.micro_batch = 2, l.sp = true;
    const MemoryBoundBytes with = block_memory_bytes(in.model, tr, cl, l, {});
    const MemoryBoundBytes without = block_memory_bytes(learned, tr, cl, l, {});
    INFO("t" << t);
    CHECK(with.elementwise_fwd - without.elementwise_fwd == want);
    CHECK(with.elementwise_bwd - without.elementwise_bwd == want);
    CHECK(with.softmax_fwd == without.softmax_fwd);
  }
}

TEST_CASE("fused attention: the causal tiles of the square at the sustained rate, no score traffic",
          "[plan][time]") {
  ModelDesc m;
  m.vocab = 1000, m.d_model = 512, m.heads = 8, m.layers = 2, m.seq = 1024, m.ffn = 2048;
  TrainDesc tr;
  tr.global_batch = 2, tr.precision = Precision::bf16;
  ClusterDesc cl = plan_test::toy_cluster(1, 4, 80);
  cl.device.sustained[precision_index(Precision::bf16)] = 100e12;
  cl.software.fused_attention = true;
  Layout l;
  l.micro_batch = 2;
  // By hand: forward QK^T and PV over the whole square, 2 * 2 T^2 dh per (sequence, head),
  // 2 sequences x 8 heads; n = 1024/128 = 8 tiles, 8*9/2 of 64 computed: 9/16.
  const double T = 1024, dh = 64, fwd = 2 * 2 * T * T * dh * 2 * 8, causal = 9.0 / 16;
  BlockGemms g = block_forward_gemms(m, l, cl, Precision::bf16, 1.0);
  CHECK(g.attention == Approx(causal * fwd / 100e12).epsilon(1e-12));
  // Backward: dP, dV, dQ, dK and the scores again (blockwise: no stored probabilities).
  CHECK(g.attention_bwd == Approx(causal * 2.5 * fwd / 100e12).epsilon(1e-12));
  // The softmax (and dropout) passes over the scores vanish; the rest is unchanged.
  TimeOptions o;
  const MemoryBoundBytes fused = block_memory_bytes(m, tr, cl, l, o);
  CHECK(fused.softmax_fwd == 0);
  CHECK(fused.softmax_bwd == 0);
  cl.software.fused_attention = false;
  const MemoryBoundBytes unfused = block_memory_bytes(m, tr, cl, l, o);
  CHECK(unfused.softmax_fwd == Approx(2 * 2.0 * 2 * 8 * T * T));  // 2 passes, 2-byte scores
  CHECK(unfused.elementwise_fwd == fused.elementwise_fwd);
  // Ring attention (c = 2): each rank's half of the queries, the same causal share.
  cl.software.fused_attention = true;
  l.c = 2;
  g = block_forward_gemms(m, l, cl, Precision::bf16, 1.0);
  CHECK(g.attention == Approx(causal * fwd / 2 / 100e12).epsilon(1e-12));
}

TEST_CASE("model dropout: the attention passes of software.attention_dropout, masks streamed once",
          "[plan][time][dropout]") {
  // Full attention (stored probabilities), bf16, B 2, T 64, d 64, 4 heads: scores
  // 2 x 4 x 64 x 64 = 32768 per block. model.attention_dropout costs what the cluster's
  // software.attention_dropout costs (2 + 1/a more passes over the scores each way),
  // and its stored mask and dropped P are not streamed a second time as activations;
  // model.hidden_dropout's two 1-byte masks [N, d] are (written forward, read backward):
  // 2 x 128 x 64 = 16384 bytes, in the elementwise passes' one-third / two-thirds split.
  ModelDesc m;
  m.vocab = 1000, m.d_model = 64, m.heads = 4, m.layers = 2, m.seq = 64, m.ffn = 256;
  m.attention = Attention::full;
  TrainDesc tr;
  tr.global_batch = 2, tr.precision = Precision::bf16;
  ClusterDesc cl = plan_test::toy_cluster(1, 4, 80);
  Layout l;
  l.micro_batch = 2;
  const TimeOptions o;
  const MemoryBoundBytes plain = block_memory_bytes(m, tr, cl, l, o);
  cl.software.attention_dropout = true;
  const MemoryBoundBytes software = block_memory_bytes(m, tr, cl, l, o);
  cl.software.attention_dropout = false;
  ModelDesc drop = m;
  drop.attention_dropout = 0.1;
  const MemoryBoundBytes model = block_memory_bytes(drop, tr, cl, l, o);
  CHECK(model.softmax_fwd == software.softmax_fwd);
  CHECK(model.softmax_bwd == software.softmax_bwd);
  CHECK(model.softmax_fwd - plain.softmax_fwd == Approx((2 + 0.5) * 2 * 32768.0));
  CHECK(model.elementwise_fwd == plain.elementwise_fwd);
  drop.hidden_dropout = 0.1;
  const MemoryBoundBytes both = block_memory_bytes(drop, tr, cl, l, o);
  CHECK(both.elementwise_fwd - plain.elementwise_fwd == Approx(o.elementwise_passes / 3 * 16384.0));
  CHECK(both.elementwise_bwd - plain.elementwise_bwd == Approx(o.elementwise_passes * 2 / 3 * 16384.0));
}

TEST_CASE("oversubscription: groups beyond one leaf switch get 1/R of the inter-node rate",
          "[plan][comm][oversubscription]") {
  // 16 nodes of 8 devices, 20 GB/s between nodes, 2:1 through the spine, 4 nodes a leaf.
  const std::string base =
      "name: fat-tree\nnodes: 16\ndevices_per_node: 8\n"
      "device: {memory_gib: 80, memory_bandwidth_gbs: 1000, peak_tflops: {bf16: 100}}\n"
      "links:\n  intra_node: {name: nvlink, bandwidth_gbs: 100, latency_us: 1}\n"
      "  inter_node: {name: ib, bandwidth_gbs: 20, latency_us: 5, curve: [[1e6, 10], [1e9, 20]]";
  const ClusterDesc plain = parse_cluster_text(base + "}\n", "a.yaml");
  const ClusterDesc cl = parse_cluster_text(base + ", oversubscription: 2, nodes_per_leaf: 4}\n", "b.yaml");
  REQUIRE(plain.tiers.size() == 2);
  REQUIRE(cl.tiers.size() == 3);
  CHECK(cl.tiers[1].span_devices == 32);
  CHECK(cl.tiers[2].bandwidth == 10e9);
  CHECK(cl.tiers[2].bandwidth_at(1e9) == 10e9);  // the curve's 20 GB/s point halved
  CHECK(cl.tiers[2].latency == plain.tiers[1].latency);
  // Data parallelism over every node (stride 8, 16 ranks: 16 nodes) crosses the spine:
  // a ring all-reduce of 1 GB, 2*15*5 us + 2*15/16 * 1e9 / 10e9 s, by hand.
  const double S = 1e9;
  const int spine = tier_for_group(cl, 8, 16);
  CHECK(spine == 2);
  CHECK(allreduce_time(S, 16, cl.tiers[std::size_t(spine)]) == Approx(2 * 15 * 5e-6 + 2.0 * 15 / 16 * S / 10e9));
  // Without the fields, the same group pays the stated 20 GB/s.
  CHECK(allreduce_time(S, 16, plain.tiers[std::size_t(tier_for_group(plain, 8, 16))]) ==
        Approx(2 * 15 * 5e-6 + 2.0 * 15 / 16 * S / 20e9));
  // Four nodes (one aligned leaf) keep the full rate; a group of 3 nodes straddles leaves
  // in the block placement (32 is not a multiple of 24): the spine.
  const int leaf = tier_for_group(cl, 8, 4);
  CHECK(leaf == 1);
  CHECK(allreduce_time(S, 4, cl.tiers[std::size_t(leaf)]) == Approx(2 * 3 * 5e-6 + 2.0 * 3 / 4 * S / 20e9));
  CHECK(tier_for_group(cl, 8, 3) == 2);
  // Inside a node nothing changes.
  CHECK(tier_for_group(cl, 1, 8) == 0);
  // 1:1 is no change; a ratio without a leaf size is an error naming the field.
  CHECK(parse_cluster_text(base + ", oversubscription: 1}\n", "c.yaml").tiers.size() == 2);
  CHECK_THROWS_WITH(parse_cluster_text(base + ", oversubscription: 2}\n", "d.yaml"),
                    Catch::Contains("links.inter_node.nodes_per_leaf: missing"));
}
