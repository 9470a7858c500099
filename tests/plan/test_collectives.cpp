// SPDX-License-Identifier: BSD-3-Clause
// Collective algorithms (software.collectives): the ring and NCCL's double binary tree
// by hand, which one an all-reduce takes by size and rank count, and on which tiers.
#include <catch2/catch.hpp>

#include <string>

#include "mini5d/plan/cost/comm_model.hpp"
#include "mini5d/plan/inputs/input_files.hpp"
#include "plan_test_util.hpp"

using namespace mini5d::plan;

namespace {
const std::string kCluster =
    "nodes: 16\ndevices_per_node: 8\ndevice:\n  memory_gib: 80\n  memory_bandwidth_gbs: 3000\n"
    "  peak_tflops: {bf16: 989}\nlinks:\n  intra_node: {bandwidth_gbs: 200, latency_us: 2}\n"
    "  inter_node: {bandwidth_gbs: 10, latency_us: 5}\n";
LinkTier net(bool tree) {
  LinkTier l;
  l.bandwidth = 10e9, l.latency = 5e-6, l.tree_allreduce = tree;
  return l;
}
}  // namespace

TEST_CASE("all-reduce: ring and double binary tree by hand", "[plan][comm][collectives]") {
  // 128 ranks, 10 GB/s bus bandwidth, 5 us a step.
  //   ring: 2 x 127 steps + 2 x 127/128 x S / B;  tree: 2 x log2(128) = 14 steps + 2 S / B.
  const double S = 1e6;
  CHECK(ring_allreduce_time(S, 128, net(false)) == Approx(254 * 5e-6 + 2.0 * 127 / 128 * S / 10e9));
  CHECK(tree_allreduce_time(S, 128, net(false)) == Approx(14 * 5e-6 + 2.0 * S / 10e9));
  // Ranks that are not a power of two: the tree is ceil(log2 n) deep (100 ranks: 7).
  CHECK(tree_allreduce_time(S, 100, net(false)) == Approx(14 * 5e-6 + 2.0 * S / 10e9));
  // Without tree_allreduce every all-reduce is a ring, whatever the size.
  CHECK(allreduce_time(S, 128, net(false)) == ring_allreduce_time(S, 128, net(false)));
  // With it: the tree below the size where the ring's 240 extra steps cost what the
  // tree's extra 2/128 bytes per payload byte do, 240 x 5 us x 10 GB/s x 64 = 768 MB,
  // and the ring above it.
  const double cross = 240 * 5e-6 * 10e9 * 64;
  CHECK(allreduce_time(0.99 * cross, 128, net(true)) == tree_allreduce_time(0.99 * cross, 128, net(true)));
  CHECK(allreduce_time(0.99 * cross, 128, net(true)) < ring_allreduce_time(0.99 * cross, 128, net(true)));
  CHECK(allreduce_time(1.01 * cross, 128, net(true)) == ring_allreduce_time(1.01 * cross, 128, net(true)));
  // Two ranks: the ring is never slower (2 steps each, S against 2 S bytes).
  CHECK(allreduce_time(1e3, 2, net(true)) == ring_allreduce_time(1e3, 2, net(true)));
  // At thousands of ranks the ring's latency alone is 2 x 4095 x 5 us = 41 ms a call;
  // the tree's 2 x 12 steps are 0.12 ms.
  CHECK(allreduce_time(1e3, 4096, net(true)) == Approx(24 * 5e-6 + 2e3 / 10e9));
}

TEST_CASE("software.collectives: nccl puts trees on the tiers that cross nodes", "[plan][comm][collectives]") {
  const ClusterDesc ring = parse_cluster_text(kCluster, "c.yaml");
  CHECK(ring.software.collectives == "ring");
  for (const LinkTier& t : ring.tiers) CHECK_FALSE(t.tree_allreduce);
  const ClusterDesc nccl = parse_cluster_text(kCluster + "software: {collectives: nccl}\n", "c.yaml");
  REQUIRE(nccl.tiers.size() == 2);
  CHECK_FALSE(nccl.tiers[0].tree_allreduce);  // inside a node NCCL chains the devices
  CHECK(nccl.tiers[1].tree_allreduce);
  // The spine of an oversubscribed network is a tier across nodes too.
  std::string over = kCluster;
  over.replace(over.find("latency_us: 5}"), 14, "latency_us: 5, oversubscription: 2, nodes_per_leaf: 4}");
  const ClusterDesc spine = parse_cluster_text(over + "software: {collectives: nccl}\n", "c.yaml");
  REQUIRE(spine.tiers.size() == 3);
  CHECK_FALSE(spine.tiers[0].tree_allreduce);
  CHECK(spine.tiers[1].tree_allreduce);
  CHECK(spine.tiers[2].tree_allreduce);
  CHECK(plan_test::cluster_error(kCluster + "software: {collectives: tree}\n") ==
        "c.yaml: software.collectives: 'tree' is not valid (valid: ring, nccl)");
}
