// SPDX-License-Identifier: BSD-3-Clause
// A group's collectives across nodes under NCCL (one channel per NIC: a group with g
// members on a node crosses nodes through g NICs at once, until the node's own hops
// bind), the members a group has on one node, and a framework that reduces its
// gradients after the last backward (software.grad_reduce_overlap: false), by hand.
#include <catch2/catch.hpp>

#include <string>

#include "mini5d/plan/cost/comm_model.hpp"
#include "mini5d/plan/cost/memory_model.hpp"
#include "mini5d/plan/cost/time_model.hpp"
#include "plan_test_util.hpp"

using namespace mini5d::plan;

namespace {
// 2 nodes of 8, NVLink-like 200 GB/s inside a node, one 10 GB/s NIC per device (5 us).
ClusterDesc cluster(const std::string& software, double intra_gbs = 200) {
  return plan_test::toy_cluster(2, 8, 80, intra_gbs, 10, software);
}
Layout layout(int d, int t, int p = 1, int c = 1, int e = 1) {
  Layout l;
  l.d = d, l.t = t, l.p = p, l.c = c, l.e = e, l.micro_batch = 1, l.accumulation = 1;
  return l;
}
}  // namespace

TEST_CASE("members of a group on one node, block mapping", "[plan][comm][nic]") {
  const ClusterDesc cl = cluster("");
  const auto dense = {Axis::d, Axis::c, Axis::e};
  CHECK(members_per_node(cl, layout(16, 1), dense) == 8);  // d fills the node
  CHECK(members_per_node(cl, layout(8, 2), dense) == 4);   // t = 2 takes every other rank
  CHECK(members_per_node(cl, layout(2, 8), dense) == 1);   // t fills the node
  CHECK(members_per_node(cl, layout(4, 1, 1, 2), dense) == 8);  // d and c both in the group
  CHECK(members_per_node(cl, layout(2, 4, 2), dense) == 1);     // t x p = 8 on the node
  // Mixtral's shape: t 2, e 4 on a node; the dense group d*c*e has the 4 e ranks, the
  // expert group d*c none but itself.
  CHECK(members_per_node(cl, layout(2, 2, 1, 1, 4), dense) == 4);
  CHECK(members_per_node(cl, layout(2, 2, 1, 1, 4), {Axis::d, Axis::c}) == 1);
  CHECK(members_per_node(cl, layout(16, 1), {Axis::t}) == 1);
  Layout cyc = layout(16, 1);
  cyc.mapping = Mapping::cyclic;  // not counted under cyclic dealing: conservative
  CHECK(members_per_node(cl, cyc, dense) == 1);
}

TEST_CASE("collective_link: g NICs at once, bounded by the node's hops", "[plan][comm][nic]") {
  const ClusterDesc nccl = cluster("software: {collectives: nccl}\n");
  REQUIRE(nccl.tiers.size() == 2);
  CHECK_FALSE(nccl.tiers[0].nic_channels);
  CHECK(nccl.tiers[1].nic_channels);
  // g = 1: the tier as it is; g = 4: 4 x 10 GB/s (the node's bound, 200 / (10 x 3/4) =
  // 26.7, is far off); the node's own tier never changes.
  CHECK(collective_link(nccl, 1, 1).bandwidth == Approx(10e9));
  CHECK(collective_link(nccl, 1, 4).bandwidth == Approx(40e9));
  CHECK(collective_link(nccl, 1, 4).latency == Approx(5e-6));
  CHECK(collective_link(nccl, 0, 8).bandwidth == Approx(200e9));
  // A slow node: 30 GB/s inside it. With g = 8 each rank sends 7/8 of its ring bytes
  // there and 1/8 through its NIC: min(8, 30 / (10 x 7/8)) = 3.43 x 10 GB/s.
  const ClusterDesc slow = cluster("software: {collectives: nccl}\n", 30);
  CHECK(collective_link(slow, 1, 8).bandwidth == Approx(30e9 / (7.0 / 8)));
  // MPI's flat rings (collectives: ring): every rank's bytes through its own link.
  const ClusterDesc ring = cluster("");
  CHECK_FALSE(ring.tiers[1].nic_channels);
  CHECK(collective_link(ring, 1, 8).bandwidth == Approx(10e9));
}

TEST_CASE("gradient reduction: NIC channels and software.grad_reduce_overlap", "[plan][comm][nic][time]") {
  plan_test::CpToy x = plan_test::cp_toy();
  const Layout l = layout(16, 1);  // d = 16 over 2 nodes: 8 members per node
  x.tr.global_batch = 16;
  const double S = dp_reduction_bytes(stage_params(x.m, l, 0).dense, x.tr.precision, x.tr.fp32_grad_accum,
                                      x.tr.bf16_grad_reduce);
  const TimeOptions o;
  // By hand: NCCL's 16-rank all-reduce over 8 NICs per node, 80 GB/s, 5 us a step; MPI's
  // flat ring over one 10 GB/s link per rank.
  LinkTier eight;
  eight.bandwidth = 80e9, eight.latency = 5e-6, eight.tree_allreduce = true;
  const TimeBreakdown nccl = step_time(x.m, x.tr, cluster("software: {collectives: nccl}\n"), l, o);
  CHECK(nccl.dp_total == Approx(allreduce_time(S, 16, eight)));
  const TimeBreakdown ring = step_time(x.m, x.tr, cluster(""), l, o);
  CHECK(ring.dp_total == Approx(2.0 * 15 * 5e-6 + 2.0 * 15 / 16 * S / 10e9));
  // Overlapped (the default), the last backward hides some of it; reduced after the
  // last backward, all of it is exposed, and nothing else in the step moves.
  const TimeBreakdown after = step_time(x.m, x.tr, cluster("software: {grad_reduce_overlap: false}\n"), l, o);
  CHECK(ring.dp < ring.dp_total);
  CHECK(after.dp == Approx(after.dp_total));
  CHECK(after.dp_total == Approx(ring.dp_total));
  CHECK(after.step - ring.step == Approx(after.dp - ring.dp));
  // ZeRO-3's per-micro-batch gathers and reduce-scatters: hidden behind compute where
  // the framework overlaps, exposed where it overlaps no data-parallel traffic.
  Layout z3 = l;
  z3.zero = 3;
  const TimeBreakdown z3_overlap = step_time(x.m, x.tr, cluster(""), z3, o);
  const TimeBreakdown z3_after = step_time(x.m, x.tr, cluster("software: {grad_reduce_overlap: false}\n"), z3, o);
  CHECK(z3_overlap.zero3 < z3_overlap.zero3_total);
  CHECK(z3_after.zero3 == Approx(z3_after.zero3_total));
  CHECK(z3_after.zero3_total == Approx(z3_overlap.zero3_total));
  try {
    cluster("software: {grad_reduce_overlap: sometimes}\n");
    FAIL("a bad grad_reduce_overlap loaded");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()) ==
          "toy.yaml: software.grad_reduce_overlap: 'sometimes' is not a boolean (valid: true, false)");
  }
}
