// SPDX-License-Identifier: BSD-3-Clause
// The inter-node network's shape from the cluster file: links.inter_node.rails (the
// node's network interfaces, each on its own rail) against hand computations.
#include <catch2/catch.hpp>

#include <string>

#include "mini5d/plan/cost/comm_model.hpp"
#include "mini5d/plan/inputs/input_files.hpp"
#include "plan_test_util.hpp"

using namespace mini5d::plan;

namespace {
// 8 devices a node; the inter-node figures are one rail's (25 GB/s, a measured curve).
std::string cluster(const std::string& rails) {
  return "nodes: 4\ndevices_per_node: 8\ndevice:\n  memory_gib: 80\n  memory_bandwidth_gbs: 2000\n"
         "  peak_tflops: {bf16: 312}\nlinks:\n  intra_node: {bandwidth_gbs: 200, latency_us: 2}\n"
         "  inter_node: {bandwidth_gbs: 25, latency_us: 5, curve: [[1000000, 10], [100000000, 25]]" +
         rails + "}\n";
}
}  // namespace

TEST_CASE("links.inter_node.rails: a node's devices share its rails", "[plan][comm][network]") {
  const ClusterDesc per_device = parse_cluster_text(cluster(""), "c.yaml");
  const ClusterDesc four = parse_cluster_text(cluster(", rails: 4"), "c.yaml");
  const ClusterDesc eight = parse_cluster_text(cluster(", rails: 8"), "c.yaml");
  const LinkTier &a = per_device.tiers.back(), &b = four.tiers.back(), &c = eight.tiers.back();
  // Absent: the figures are per device. 4 rails for 8 devices: half a rail each, at every
  // size of the curve too; 8 rails: one each, the same as absent.
  CHECK(a.bandwidth == Approx(25e9));
  CHECK(b.bandwidth == Approx(12.5e9));
  CHECK(b.bandwidth_at(1e6) == Approx(5e9));
  CHECK(b.bandwidth_at(1e8) == Approx(12.5e9));
  CHECK(c.bandwidth_at(1e7) == Approx(a.bandwidth_at(1e7)));
  CHECK(b.latency == a.latency);
  CHECK(b.name == "links.inter_node (4 rails for 8 devices)");
  // A d = 4 all-reduce of 1 GB across the 4 nodes (one rank a node per group, all 8
  // groups at once): 2 x 3 x 5 us + 1.5 x 1 GB / 12.5 GB/s.
  Layout l;
  l.t = 8, l.d = 4;
  const int tier = gradient_group_tier(four, l);
  REQUIRE(tier == 1);
  CHECK(allreduce_time(1e9, 4, four.tiers[std::size_t(tier)]) == Approx(6 * 5e-6 + 1.5 * 1e9 / 12.5e9));
  // The node's own link is untouched.
  CHECK(four.tiers.front().bandwidth == per_device.tiers.front().bandwidth);
  CHECK(plan_test::cluster_error(cluster(", rails: 0")) ==
        "c.yaml: links.inter_node.rails: 0 is out of range (network interfaces (rails) per node; valid: an "
        "integer in [1, 64])");
}
