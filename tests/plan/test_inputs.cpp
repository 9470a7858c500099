// SPDX-License-Identifier: BSD-3-Clause
// Reading model/cluster descriptions: decks are models, and every bad file gets one
// line naming file, field and valid range.
#include <catch2/catch.hpp>

#include <string>

#include "mini5d/plan/cost/comm_model.hpp"
#include "mini5d/plan/inputs/input_files.hpp"
#include "plan_test_util.hpp"

using namespace mini5d::plan;

namespace {
std::string error_of(const std::string& cluster_text) { return plan_test::cluster_error(cluster_text); }
std::string model_error(const std::string& text) {
  try {
    parse_model_text(text, "m.yaml");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}
const std::string kGood =
    "nodes: 2\ndevices_per_node: 8\ndevice:\n  memory_gib: 80\n  memory_bandwidth_gbs: 3000\n"
    "  peak_tflops: {bf16: 989}\nlinks:\n  intra_node: {bandwidth_gbs: 360, latency_us: 5}\n"
    "  inter_node: {bandwidth_gbs: 40, latency_us: 10}\n";
std::string replace(std::string s, const std::string& a, const std::string& b) {
  s.replace(s.find(a), a.size(), b);
  return s;
}
}  // namespace

TEST_CASE("a mini5d deck reads as a model description", "[plan][inputs]") {
  CHECK(load_model_file(plan_test::input("tiny.yaml")).is_deck);
  const ModelInput in = load_model_file(plan_test::data("deck_small.yaml"));
  CHECK(in.is_deck);
  CHECK(in.model.vocab == 32);
  CHECK(in.model.d_model == 64);
  CHECK(in.model.layers == 2);
  CHECK(in.model.heads == 4);
  CHECK(in.model.seq == 32);
  CHECK(in.model.ffn == 256);
  CHECK(!in.model.moe());
  CHECK(in.train.global_batch == 8);  // micro_batch 8 x accumulation 1 x d 1 x e 1
  CHECK(in.train.precision == Precision::fp32);
  CHECK(in.model.name == "deck_small");
  // Every runtime deck field is accepted (and the ones the planner needs are read).
  const ModelInput later = parse_model_text(
      "model: {vocab: 64, d_model: 32, layers: 4, heads: 4, seq: 16, ffn: 128, experts: 8, "
      "top_k: 2, capacity_factor: 1.5}\nparallel: {d: 2, t: 1, p: 2, c: 1, e: 2, zero: 1, "
      "virtual_stages: 2, ranks_per_node: 4, bucket_mb: 25, schedule: interleaved}\n"
      "train: {micro_batch: 2, accumulation: 4, recompute: selective, aux_loss_coef: 0.01}\n"
      "checkpoint: {dir: ck}\n",
      "later.yaml");
  CHECK(later.model.experts == 8);
  CHECK(later.model.top_k == 2);
  CHECK(later.train.global_batch == 2 * 4 * 2 * 2);
  CHECK(later.deck_layout.virtual_stages == 2);
  CHECK(later.deck_layout.recompute == Recompute::selective);
}

TEST_CASE("the block's parts: model.norm, model.mlp and model.bias in model files and decks", "[plan][inputs]") {
  const ModelInput gpt = load_model_file(plan_test::input("tiny.yaml"));
  CHECK((gpt.model.norm == Norm::layernorm && gpt.model.mlp == Mlp::gelu && gpt.model.bias));
  const ModelInput llama = load_model_file(plan_test::input("llama-tiny.yaml"));
  CHECK((llama.model.norm == Norm::rmsnorm && llama.model.mlp == Mlp::swiglu && !llama.model.bias));
  const std::string model = "model: {vocab: 64, d_model: 32, layers: 4, heads: 4, seq: 16, ffn: 128, ";
  const ModelInput file = parse_model_text(model + "norm: rmsnorm, mlp: swiglu, bias: false}\n", "m.yaml");
  CHECK((file.model.norm == Norm::rmsnorm && file.model.mlp == Mlp::swiglu && !file.model.bias));
  CHECK(model_error(model + "norm: batchnorm}\n") ==
        "m.yaml: model.norm: 'batchnorm' is not valid (valid: layernorm, rmsnorm)");
  CHECK(model_error(model + "mlp: relu}\n") == "m.yaml: model.mlp: 'relu' is not valid (valid: gelu, swiglu)");
  CHECK_THAT(model_error(model + "bias: maybe}\n"), Catch::Matchers::Contains("model.bias"));
}

TEST_CASE("positions: model.positions and model.rope_theta in model files and decks", "[plan][inputs]") {
  CHECK(load_model_file(plan_test::input("tiny.yaml")).model.positions == Positions::learned);
  const ModelInput llama = load_model_file(plan_test::input("llama-tiny.yaml"));
  CHECK(llama.model.positions == Positions::rope);
  CHECK(llama.model.rope_theta == 10000);
  const std::string model = "model: {vocab: 64, d_model: 32, layers: 4, heads: 4, seq: 16, ffn: 128, ";
  const ModelInput file = parse_model_text(model + "positions: rope, rope_theta: 500000}\n", "m.yaml");
  CHECK((file.model.positions == Positions::rope && file.model.rope_theta == 500000));
  CHECK(model_error(model + "positions: alibi}\n") ==
        "m.yaml: model.positions: 'alibi' is not valid (valid: learned, rope)");
  CHECK_THAT(model_error(model + "positions: rope, rope_theta: 0}\n"),
             Catch::Matchers::StartsWith("m.yaml: model.rope_theta: 0 is out of range"));
  // d_model 36 over 4 heads: heads of 9 columns, which rope cannot pair.
  CHECK(model_error("model: {vocab: 64, d_model: 36, layers: 4, heads: 4, seq: 16, ffn: 128, positions: rope}\n") ==
        "m.yaml: model.positions: rope turns pairs of a head's columns: d_model / heads must be even, got 9");
}

TEST_CASE("cluster files load with their figures", "[plan][inputs]") {
  for (const char* f : {"clusters/h100-sxm-8.yaml", "clusters/h200-8.yaml",
                        "clusters/perlmutter-a100-4.yaml", "clusters/cpu-2core.yaml",
                        "clusters/frontier-mi250x-8.yaml", "clusters/elcapitan-mi300a-4.yaml"}) {
    INFO(f);
    const ClusterDesc cl = load_cluster_file(plan_test::input(f));
    CHECK(cl.devices() >= 2);
    CHECK(cl.device.memory > cl.device.reserved);
    CHECK(cl.device.sustained[0] > 0);
    CHECK(cl.device.sustained[0] <= cl.device.peak[0]);
  }
  const ClusterDesc h100 = load_cluster_file(plan_test::input("clusters/h100-sxm-8.yaml"));
  CHECK(h100.devices_per_node == 8);
  CHECK(h100.tiers.size() == 2);
  CHECK(h100.device.peak[1] == Approx(989e12));
  const ClusterDesc cpu = load_cluster_file(plan_test::input("clusters/cpu-2core.yaml"));
  CHECK(cpu.devices() == 2);
  CHECK(cpu.device.sustained[0] == Approx(102e9));
  CHECK(cpu.tiers.size() == 1);
  CHECK(parse_cluster_text(kGood, "c.yaml").devices() == 16);
  // AMD: a Frontier node is 8 GCDs (the devices) sharing 4 Slingshot NICs, so each GCD
  // gets half a rail's rate across nodes; an El Capitan node is 4 APUs with a NIC each.
  // Both run RCCL, costed as NCCL's algorithms (tree all-reduce across nodes).
  const ClusterDesc frontier = load_cluster_file(plan_test::input("clusters/frontier-mi250x-8.yaml"));
  CHECK(frontier.devices_per_node == 8);
  CHECK(frontier.device.peak[1] == Approx(191.5e12));
  CHECK(frontier.device.hbm_bandwidth == Approx(1600e9));
  CHECK(frontier.software.collectives == "nccl");
  CHECK_FALSE(frontier.software.grad_reduce_overlap);
  REQUIRE(frontier.tiers.size() == 2);
  CHECK(frontier.tiers[1].tree_allreduce);
  const ClusterDesc elcap = load_cluster_file(plan_test::input("clusters/elcapitan-mi300a-4.yaml"));
  CHECK(elcap.devices_per_node == 4);
  CHECK(elcap.device.peak[1] == Approx(980.6e12));
  REQUIRE(elcap.tiers.size() == 2);
  // One rail per APU: the per-device rate is the rail's; Frontier's is half of it.
  CHECK(frontier.tiers[1].bandwidth == Approx(elcap.tiers[1].bandwidth / 2));
}

TEST_CASE("bad cluster files get one clear line", "[plan][inputs]") {
  CHECK(error_of(replace(kGood, "memory_gib: 80", "memory_gib: -80")) ==
        "c.yaml: device.memory_gib: -80 is out of range (memory per device in GiB; valid: a "
        "number in [0.001, 1e+06])");
  CHECK(error_of(replace(kGood, "memory_gib: 80", "memory_gib: lots")) ==
        "c.yaml: device.memory_gib: 'lots' is not a number (memory per device in GiB; valid: "
        "a number in [0.001, 1e+06])");
  CHECK(error_of(replace(kGood, "devices_per_node: 8\n", "")) ==
        "c.yaml: devices_per_node: missing (accelerators (or ranks) per node; valid: an integer "
        "in [1, 4096])");
  CHECK(error_of(replace(kGood, "devices_per_node: 8", "devices_per_node: 2.5")) ==
        "c.yaml: devices_per_node: '2.5' is not an integer (accelerators (or ranks) per node; "
        "valid: an integer in [1, 4096])");
  CHECK(error_of(replace(kGood, "nodes: 2", "nodes: 1e3")) ==
        "c.yaml: nodes: '1e3' is not an integer (number of nodes; valid: an integer in [1, "
        "10000000])");
  CHECK(error_of(replace(kGood, "  inter_node: {bandwidth_gbs: 40, latency_us: 10}\n", "")) ==
        "c.yaml: links.inter_node: missing (bandwidth_gbs, latency_us between nodes; needed "
        "for nodes > 1)");
  CHECK(error_of(replace(kGood, "bandwidth_gbs: 360, ", "")) ==
        "c.yaml: links.intra_node.bandwidth_gbs: missing (per-device, per-direction bandwidth "
        "in GB/s; valid: a number in [1e-06, 1e+06])");
  CHECK(error_of(replace(kGood, "{bf16: 989}", "{bf16: 989}\n  sustained_tflops: {bf16: 1200}")) ==
        "c.yaml: device.sustained_tflops.bf16: 1200 is out of range (valid: <= "
        "device.peak_tflops.bf16 = 989)");
  const std::string syntax = error_of("nodes: [1\n");
  INFO(syntax);
  CHECK(syntax.rfind("c.yaml:", 0) == 0);
  CHECK(syntax.find(": YAML syntax error: ") != std::string::npos);
  CHECK(error_of("- 1\n- 2\n") == "c.yaml: expected a YAML mapping at the top level");
}

TEST_CASE("bad model files get one clear line", "[plan][inputs]") {
  const std::string good = "model: {vocab: 32, d_model: 64, layers: 2, heads: 4, seq: 32, ffn: 256}\n";
  CHECK(model_error(good).empty());
  CHECK(model_error("train: {global_batch: 1}\n") ==
        "m.yaml: model: missing section (vocab, d_model, layers, heads, seq, ffn)");
  CHECK(model_error(replace(good, "heads: 4", "heads: 5")) ==
        "m.yaml: model.heads: 5 does not divide d_model=64 (valid: a divisor of d_model)");
  CHECK(model_error(replace(good, "layers: 2", "layers: 0")) ==
        "m.yaml: model.layers: 0 is out of range (transformer blocks; valid: an integer in [1, "
        "100000])");
  CHECK(model_error(good + "train: {precision: fp8}\n") ==
        "m.yaml: train.precision: 'fp8' is not valid (valid: fp32, bf16, fp64)");
  CHECK(model_error(good + "parallel: {d: 2}\ntrain: {recompute: some}\n") ==
        "m.yaml: train.recompute: 'some' is not valid (valid: none, selective, full)");
  CHECK(model_error(replace(good, "ffn: 256}", "ffn: 256, experts: 4, top_k: 5}")) ==
        "m.yaml: model.top_k: 5 is out of range (experts per token; valid: 1..4)");
  CHECK(model_error(replace(good, "ffn: 256}", "ffn: 256, attention: flash}")) ==
        "m.yaml: model.attention: 'flash' is not valid (valid: blockwise, full)");
  CHECK(model_error(replace(good, "ffn: 256}", "ffn: 256, attention: full}")).empty());
}

TEST_CASE("misspelt fields are errors naming the valid ones", "[plan][inputs]") {
  const std::string good = "model: {vocab: 32, d_model: 64, layers: 2, heads: 4, seq: 32, ffn: 256}\n";
  // Three slips a user made: each used to plan silently with a default.
  CHECK(model_error(good + "train: {global_bach: 64}\n") ==
        "m.yaml: train.global_bach: unknown field (valid in train: global_batch, precision, "
        "fp32_grad_accum)");
  CHECK(model_error(good + "train: {precison: bf16}\n") ==
        "m.yaml: train.precison: unknown field (valid in train: global_batch, precision, "
        "fp32_grad_accum)");
  CHECK(error_of(replace(kGood, "memory_gib: 80", "memory_gib: 80\n  reservd_gib: 3")) ==
        "c.yaml: device.reservd_gib: unknown field (valid in device: kind, name, memory_gib, "
        "reserved_gib, memory_bandwidth_gbs, kernel_overhead_us, peak_tflops, "
        "sustained_tflops, gemm, memory_bound)");
  CHECK(model_error(replace(good, "ffn: 256", "ffn: 256, hedas: 4")).rfind(
            "m.yaml: model.hedas: unknown field (valid in model: name, vocab,", 0) == 0);
  CHECK(model_error(good + "optimiser: {lr: 1}\n").rfind(
            "m.yaml: optimiser: unknown section or field of a model file", 0) == 0);
  CHECK(error_of(replace(kGood, "latency_us: 5}", "latency_us: 5, bandwith_gbs: 9}")) ==
        "c.yaml: links.intra_node.bandwith_gbs: unknown field (valid in links.intra_node: name, "
        "bandwidth_gbs, latency_us, curve, gather_curve, send_curve)");
  CHECK(error_of(kGood + "nodez: 4\n").rfind("c.yaml: nodez: unknown section or field", 0) == 0);
  // In a deck the runtime's fields are the valid ones.
  const std::string deck = good + "parallel: {d: 2}\n";
  CHECK(model_error(deck + "train: {micro_bacth: 2}\n").rfind(
            "m.yaml: train.micro_bacth: unknown field (valid in train: steps, micro_batch,", 0) == 0);
  CHECK(model_error(deck + "train: {precision: bf16, global_batch: 8}\n").empty());
}

TEST_CASE("integers are integers and batch arithmetic does not overflow", "[plan][inputs]") {
  const std::string good = "model: {vocab: 32, d_model: 64, layers: 2, heads: 4, seq: 32, ffn: 256}\n";
  CHECK(model_error(replace(good, "layers: 2", "layers: 2.5")) ==
        "m.yaml: model.layers: '2.5' is not an integer (transformer blocks; valid: an integer in "
        "[1, 100000])");
  CHECK(model_error(good + "train: {global_batch: 8.0}\n").rfind(
            "m.yaml: train.global_batch: '8.0' is not an integer", 0) == 0);
  CHECK(model_error(good + "train: {global_batch: 99999999999999999999}\n").rfind(
            "m.yaml: train.global_batch: '99999999999999999999' is not an integer", 0) == 0);
  CHECK(model_error(good + "train: {global_batch: 4294967296}\n") ==
        "m.yaml: train.global_batch: 4294967296 is out of range (sequences per optimizer step; "
        "valid: an integer in [1, 2147483647])");
  // 2^20 in each factor: the product (2^80) would wrap a 64-bit integer.
  CHECK(model_error(good + "parallel: {d: 1048576, e: 1048576}\ntrain: {micro_batch: 1048576, "
                           "accumulation: 1048576}\n") ==
        "m.yaml: train.micro_batch: micro_batch*accumulation*d*e = 1.20893e+24 sequences per step "
        "is out of range (valid: at most 2147483647)");
  // A deck's own sequence-parallel and schedule settings are read.
  const ModelInput in = parse_model_text(
      good + "parallel: {t: 2, p: 2, sp: false, schedule: gpipe}\ntrain: {micro_batch: 3}\n", "d.yaml");
  CHECK(!in.deck_layout.sp);
  CHECK(in.deck_layout.schedule == Schedule::gpipe);
  CHECK(in.train.global_batch == 3);
  CHECK(parse_model_text(good + "parallel: {t: 2}\n", "d.yaml").deck_layout.micro_batch == 8);
}

TEST_CASE("a bf16 deck plans what the runtime keeps and sends: fp32 main gradients, the wire it names",
          "[plan][inputs]") {
  const std::string deck = "model: {vocab: 64, d_model: 32, layers: 2, heads: 4, seq: 16, ffn: 128}\n"
                           "parallel: {d: 2}\ntrain: {micro_batch: 2, precision: bf16}\n";
  const ModelInput plain = parse_model_text(deck, "d.yaml");
  CHECK(plain.train.fp32_grad_accum);  // 18 bytes per parameter, as the trainer's ledger
  CHECK_FALSE(plain.train.bf16_grad_reduce);
  CHECK(dp_reduction_bytes(1e6, plain.train.precision, plain.train.fp32_grad_accum, plain.train.bf16_grad_reduce) ==
        4e6);
  const ModelInput wire = parse_model_text(replace(deck, "{d: 2}", "{d: 2, grad_reduce_dtype: bf16}"), "d.yaml");
  CHECK(wire.train.fp32_grad_accum);
  CHECK(wire.train.bf16_grad_reduce);
  CHECK(dp_reduction_bytes(1e6, wire.train.precision, wire.train.fp32_grad_accum, wire.train.bf16_grad_reduce) == 2e6);
  CHECK(model_error(replace(deck, "{d: 2}", "{d: 2, grad_reduce_dtype: fp16}")) ==
        "m.yaml: parallel.grad_reduce_dtype: 'fp16' is not valid (valid: fp32, bf16)");
  // A model file keeps the planner's default: bf16 gradients, 2 bytes on the wire.
  const ModelInput file = parse_model_text(
      "model: {vocab: 64, d_model: 32, layers: 2, heads: 4, seq: 16, ffn: 128}\ntrain: {precision: bf16}\n", "m.yaml");
  CHECK_FALSE(file.train.fp32_grad_accum);
  CHECK(dp_reduction_bytes(1e6, file.train.precision, file.train.fp32_grad_accum, file.train.bf16_grad_reduce) ==
        2e6);
}
