// SPDX-License-Identifier: BSD-3-Clause
// software.fused_attention_tflops: the fused attention core at its own rate, by hand.
#include <catch2/catch.hpp>

#include <string>

#include "mini5d/plan/cost/compute_model.hpp"
#include "mini5d/plan/inputs/input_files.hpp"

using namespace mini5d::plan;

namespace {
ClusterDesc cluster(const std::string& software) {
  return parse_cluster_text(
      "nodes: 1\ndevices_per_node: 4\ndevice:\n  memory_gib: 80\n  memory_bandwidth_gbs: 3000\n"
      "  peak_tflops: {bf16: 200}\n  sustained_tflops: {bf16: 100}\nlinks:\n"
      "  intra_node: {bandwidth_gbs: 200, latency_us: 2}\nsoftware: {fused_attention: true" + software + "}\n",
      "c.yaml");
}
}  // namespace

TEST_CASE("software.fused_attention_tflops: the fused core at its own rate", "[plan][time][attention]") {
  // B 2, T 1024, 8 heads of 64: forward QK^T and PV over the square, 2 x 2 T^2 dh per
  // (sequence, head); n = 1024/128 = 8 tiles, 36 of 64 computed (9/16); backward 2.5x.
  ModelDesc m;
  m.vocab = 1000, m.d_model = 512, m.heads = 8, m.layers = 2, m.seq = 1024, m.ffn = 2048;
  Layout l;
  l.micro_batch = 2;
  const double T = 1024, fwd = 2 * 2 * T * T * 64 * 2 * 8, causal = 9.0 / 16;
  const BlockGemms gemm_rate = block_forward_gemms(m, l, cluster(""), Precision::bf16, 1.0);
  CHECK(gemm_rate.attention == Approx(causal * fwd / 100e12).epsilon(1e-12));
  const BlockGemms own = block_forward_gemms(m, l, cluster(", fused_attention_tflops: 40"), Precision::bf16, 1.0);
  CHECK(own.attention == Approx(causal * fwd / 40e12).epsilon(1e-12));
  CHECK(own.attention_bwd == Approx(causal * 2.5 * fwd / 40e12).epsilon(1e-12));
  // The linear layers keep the GEMM rate.
  CHECK(own.linear == gemm_rate.linear);
  CHECK(own.linear_bwd == gemm_rate.linear_bwd);
}
