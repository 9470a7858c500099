// SPDX-License-Identifier: BSD-3-Clause
// The calibrated cluster file's parts (what `mini5d calibrate` writes): the measured
// GEMM table, the per-kind link curves, the memory-bound rates, and the runtime's own
// product list that the table is measured for.
#include <catch2/catch.hpp>

#include <cmath>

#include "mini5d/plan/cost/comm_model.hpp"
#include "mini5d/plan/cost/compute_model.hpp"
#include "mini5d/plan/inputs/input_files.hpp"
#include "mini5d/plan/cost/time_model.hpp"
#include "plan_test_util.hpp"

using namespace mini5d::plan;

namespace {

const char* kMeasured =
    "name: cal\nnodes: 2\ndevices_per_node: 1\n"
    "device:\n  kind: cpu\n  memory_gib: 8\n  memory_bandwidth_gbs: 20\n  kernel_overhead_us: 2\n"
    "  peak_tflops: {fp32: 0.1}\n"
    "  memory_bound: {elementwise_gbs: 40, softmax_gbs: 4, optimizer_gbs: 50, measured: true}\n"
    "  gemm:\n    model: measured\n    call_overhead_us: 1\n    table:\n"
    "      - [NT, 512, 192, 64, 80]\n"
    "      - [NT, 512, 512, 512, 95]\n"
    "      - [TN, 192, 64, 512, 60]\n"
    "links:\n"
    "  intra_node: {name: none, bandwidth_gbs: 1, latency_us: 1}\n"
    "  inter_node:\n    name: net\n    bandwidth_gbs: 3\n    latency_us: 2\n"
    "    curve: [[65536, 1], [1048576, 4]]\n"
    "    gather_curve: [[65536, 0.5], [1048576, 2]]\n"
    "    send_curve: [[65536, 8], [1048576, 10]]\n";

double secs(double m, double n, double k, double gflops) { return 2 * m * n * k / (gflops * 1e9); }

}  // namespace

TEST_CASE("measured GEMM table: exact at a measured shape, roofline-scaled between", "[plan][calibrated]") {
  const ClusterDesc cl = parse_cluster_text(kMeasured, "cal.yaml");
  const DeviceDesc& dev = cl.device;
  REQUIRE(dev.gemm_model == GemmModel::measured);
  REQUIRE(dev.gemm_table.size() == 3);
  // A measured (op, m, n, k): its seconds, times the count (one call per product).
  CHECK(gemm_time(dev, Precision::fp32, {'N', 'T', 512, 192, 64, 1}) == Approx(secs(512, 192, 64, 80)));
  CHECK(gemm_time(dev, Precision::fp32, {'N', 'T', 512, 192, 64, 3}) == Approx(3 * secs(512, 192, 64, 80)));
  CHECK(gemm_time(dev, Precision::fp32, {'T', 'N', 192, 64, 512, 1}) == Approx(secs(192, 64, 512, 60)));
  // The op matters: the same shape as NN is not the TN row.
  const double nn = gemm_time(dev, Precision::fp32, {'N', 'N', 192, 64, 512, 1});
  CHECK(nn != Approx(secs(192, 64, 512, 60)));
  // Between points: the roofline's time scaled by a weighted mean of the measured
  // points' ratios, so within the range of those ratios.
  const GemmCall mid{'N', 'T', 512, 256, 128, 1};
  const double roof = roofline_gemm_time(dev, Precision::fp32, mid);
  double lo = 1e30, hi = 0;
  for (const GemmPoint& p : dev.gemm_table) {
    const double r = p.seconds / roofline_gemm_time(dev, Precision::fp32, {p.ta, p.tb, p.m, p.n, p.k, 1});
    lo = std::min(lo, r), hi = std::max(hi, r);
  }
  const double t = gemm_time(dev, Precision::fp32, mid);
  CHECK(t >= roof * lo * (1 - 1e-12));
  CHECK(t <= roof * hi * (1 + 1e-12));
  // The table is fp32 (what the runtime trains); another precision keeps the roofline.
  CHECK(gemm_time(dev, Precision::fp64, {'N', 'T', 512, 192, 64, 1}) ==
        Approx(roofline_gemm_time(dev, Precision::fp64, {'N', 'T', 512, 192, 64, 1})));
}

TEST_CASE("per-kind link curves: all-reduce, gathers and sends each read their own", "[plan][calibrated]") {
  const ClusterDesc cl = parse_cluster_text(kMeasured, "cal.yaml");
  const LinkTier& net = cl.tiers.back();
  CHECK(net.bandwidth_at(1 << 20) == Approx(4e9));
  CHECK(net.bandwidth_at(1 << 20, LinkOp::gather) == Approx(2e9));
  CHECK(net.bandwidth_at(1 << 20, LinkOp::send) == Approx(10e9));
  CHECK(allreduce_time(1 << 20, 2, net) == Approx(2 * 2e-6 + 1.0 * (1 << 20) / 4e9));
  CHECK(allgather_time(1 << 20, 2, net) == Approx(2e-6 + 0.5 * (1 << 20) / 2e9));
  CHECK(reduce_scatter_time(1 << 20, 2, net) == Approx(allgather_time(1 << 20, 2, net)));
  CHECK(send_time(1 << 20, net) == Approx(2e-6 + (1 << 20) / 10e9));
  // A tier without its own gather or send curve falls back to `curve`.
  const ClusterDesc cpu = load_cluster_file(plan_test::input("clusters/cpu-2core.yaml"));
  const LinkTier& shm = cpu.tiers.front();
  CHECK(shm.bandwidth_at(1 << 20, LinkOp::send) == Approx(shm.bandwidth_at(1 << 20)));
}

TEST_CASE("memory-bound rates divide the planner's byte counts; measured ones carry the launch costs",
          "[plan][calibrated]") {
  const ClusterDesc cl = parse_cluster_text(kMeasured, "cal.yaml");
  CHECK(cl.device.elementwise_bw() == Approx(40e9));
  CHECK(cl.device.softmax_bw() == Approx(4e9));
  CHECK(cl.device.optimizer_bw() == Approx(50e9));
  CHECK(cl.device.memory_bound_measured);
  const ModelInput in = load_model_file(plan_test::input("tiny.yaml"));
  Layout l;
  l.d = 2, l.micro_batch = 16;
  TrainDesc tr = in.train;
  tr.global_batch = 32;
  const TimeOptions o;
  const TimeBreakdown tb = step_time(in.model, tr, cl, l, o);
  const MemoryBoundBytes b = block_memory_bytes(in.model, tr, cl, l, o);
  const double L = double(in.model.layers);
  const double want = L * (b.elementwise_fwd + b.elementwise_bwd) / 40e9 + L * (b.softmax_fwd + b.softmax_bwd) / 4e9 +
                      head_memory_bytes(in.model, tr, l, o) / 40e9;
  CHECK(tb.compute_memory == Approx(want));
  CHECK(tb.compute_launch == 0);  // measured rates already hold them (no fixed part given)
  // A fitted fixed part per block and micro-batch replaces the per-kernel charge.
  std::string with_fixed = kMeasured;
  with_fixed.replace(with_fixed.find("measured: true}"), 15, "measured: true, fixed_us_per_block: 30}");
  const ClusterDesc fixed = parse_cluster_text(with_fixed, "cal.yaml");
  CHECK(step_time(in.model, tr, fixed, l, o).compute_launch == Approx(L * 30e-6));
  std::string unmeasured = kMeasured;
  unmeasured.replace(unmeasured.find("measured: true}"), 15, "fixed_us_per_block: 30}");
  CHECK_THROWS_WITH(parse_cluster_text(unmeasured, "c.yaml"),
                    Catch::Contains("device.memory_bound.fixed_us_per_block: needs measured: true"));
  CHECK(tb.optimizer == Approx(optimizer_bytes(in.model, tr, l, 0) / 50e9));
  // Without device.memory_bound: the memory bandwidth, and the per-kernel costs apart.
  const ClusterDesc plain = plan_test::toy_cluster(1, 2, 8);
  CHECK(plain.device.elementwise_bw() == plain.device.hbm_bandwidth);
  CHECK(step_time(in.model, tr, plain, l, o).compute_launch > 0);
}

TEST_CASE("the product list is the runtime's: ops, causal blocks and the backward's own shapes",
          "[plan][calibrated]") {
  ModelDesc m;
  m.vocab = 16, m.d_model = 64, m.layers = 2, m.heads = 4, m.seq = 160, m.ffn = 256;
  Layout l;
  l.micro_batch = 2;
  SoftwareDesc sw;
  sw.attention_block = 64;
  const BlockGemmCalls c = block_gemm_calls(m, l, sw, 1.0);
  const double N = 2 * 160;
  REQUIRE(c.linear_fwd.size() == 4);
  CHECK(c.linear_fwd[0].ta == 'N');
  CHECK(c.linear_fwd[0].tb == 'T');
  CHECK(c.linear_fwd[0].m == N);
  CHECK(c.linear_fwd[0].n == 192);
  CHECK(c.linear_fwd[0].k == 64);
  // Backward: dx = dy W (NN, N x in x out), dW = dy^T x (TN, out x in x N).
  REQUIRE(c.linear_bwd.size() == 8);
  CHECK((c.linear_bwd[0].ta == 'N' && c.linear_bwd[0].tb == 'N' && c.linear_bwd[0].n == 64 && c.linear_bwd[0].k == 192));
  CHECK((c.linear_bwd[1].ta == 'T' && c.linear_bwd[1].m == 192 && c.linear_bwd[1].n == 64 && c.linear_bwd[1].k == N));
  // T = 160 in blocks of 64: 64, 64, 32 queries against keys up to 64, 128, 160, per
  // (batch, head): two products forward, four backward per block, and with blockwise
  // attention (the default) a fifth: the block's scores again, as it keeps no P.
  REQUIRE(c.attention_fwd.size() == 6);
  REQUIRE(c.attention_bwd.size() == 15);
  CHECK((c.attention_bwd[4].ta == 'N' && c.attention_bwd[4].tb == 'T' && c.attention_bwd[4].n == 64));
  ModelDesc full = m;
  full.attention = Attention::full;
  CHECK(block_gemm_calls(full, l, sw, 1.0).attention_bwd.size() == 12);
  CHECK(c.attention_fwd[4].m == 32);
  CHECK(c.attention_fwd[4].n == 160);
  CHECK(c.attention_fwd[4].count == 2 * 4);
  double causal = 0;
  for (const GemmCall& g : c.attention_fwd) causal += g.flops();
  const double square = 2 * (2.0 * 160 * 160 * 16 * 8);  // QK^T and PV over the whole square
  CHECK(causal == Approx(square * (64.0 * 64 + 64 * 128 + 32 * 160) / (160.0 * 160)));
  // The roofline charges the backward exactly twice the forward (same operand sizes).
  const ClusterDesc cl = plan_test::toy_cluster(1, 1, 8);
  double f = 0, b = 0;
  for (const GemmCall& g : c.linear_fwd) f += gemm_time(cl.device, Precision::fp32, g);
  for (const GemmCall& g : c.linear_bwd) b += gemm_time(cl.device, Precision::fp32, g);
  CHECK(b == Approx(2 * f));
}

TEST_CASE("measured-table rows are checked: op, integers, ranges", "[plan][calibrated]") {
  auto error_of = [](const std::string& row) {
    std::string text = kMeasured;
    const std::string at = "      - [NT, 512, 192, 64, 80]\n";
    text.replace(text.find(at), at.size(), "      - " + row + "\n");
    try {
      (void)parse_cluster_text(text, "c.yaml");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK(error_of("[XT, 512, 192, 64, 80]") == "c.yaml: device.gemm.table[0]: op 'XT' is not valid (valid: NN, NT, TN, TT)");
  CHECK(error_of("[NT, 512.5, 192, 64, 80]").find("device.gemm.table[0]: 512.5 is out of range") != std::string::npos);
  CHECK(error_of("[NT, 512, 192, 64]") ==
        "c.yaml: device.gemm.table[0]: expected [op, m, n, k, GFLOP/s], e.g. [NT, 2048, 1536, 512, 98.5]");
  CHECK(error_of("[NT, 512, 192, 64, 0]").find("is out of range") != std::string::npos);
  std::string no_table = kMeasured;
  no_table.erase(no_table.find("    table:\n"));
  no_table += "links:\n  intra_node: {name: none, bandwidth_gbs: 1, latency_us: 1}\n";
  CHECK_THROWS_WITH(parse_cluster_text(no_table, "c.yaml"),
                    Catch::Contains("device.gemm.table: missing (model: measured needs"));
}
