// SPDX-License-Identifier: BSD-3-Clause
// Context parallelism as an all-gather (software.context_parallel: allgather): the time
// model's exposed K/V gather and dK/dV reduce-scatter against a hand count, the ring
// left as it was, and the field's one-line error.
#include <catch2/catch.hpp>

#include <string>

#include "mini5d/plan/inputs/input_files.hpp"
#include "mini5d/plan/cost/time_model.hpp"
#include "plan_test_util.hpp"

using namespace mini5d::plan;

TEST_CASE("context parallelism by all-gather: exposed gather and reduce-scatter by hand",
          "[plan][time][cp]") {
  // plan_test::cp_toy (test_traffic's ring case): K/V blocks of 65536 bytes, dK/dV of
  // 131072. An all-gather of the four blocks over 4 ranks: 3 steps of 1 us + 3/4 x 4 x
  // 65536 bytes at 100 GB/s; the reduce-scatter of the four dK/dV blocks: 3 us +
  // 3 x 131072 / 1e11. All exposed.
  const double gather = 3e-6 + 3 * 65536 / 1e11, scatter = 3e-6 + 3 * 131072 / 1e11;
  plan_test::CpToy toy = plan_test::cp_toy();
  ClusterDesc ring_cl = plan_test::toy_cluster(1, 8, 80), gather_cl = ring_cl;
  gather_cl.software.context_parallel = "allgather";
  for (const Recompute r : {Recompute::none, Recompute::selective, Recompute::full}) {
    toy.l.recompute = r;
    INFO("recompute " << int(r));
    const TimeBreakdown ring = step_time(toy.m, toy.tr, ring_cl, toy.l, {});
    const TimeBreakdown ag = step_time(toy.m, toy.tr, gather_cl, toy.l, {});
    const double gathers = r == Recompute::none ? 1 : 2;  // the recomputed forward gathers again
    CHECK(ag.cp_total == Approx(2 * (gathers * gather + scatter)).epsilon(1e-12));
    CHECK(ag.cp == Approx(ag.cp_total).epsilon(1e-12));  // nothing hidden
    // The ring's traffic is more (K/V travel again with dK/dV backward) but mostly
    // hidden; every other part of the step is the same.
    CHECK(ring.cp_total > ag.cp_total);
    CHECK(ring.cp < ring.cp_total);
    CHECK(ag.compute == Approx(ring.compute));
    CHECK(ag.tp == Approx(ring.tp));
  }
}

TEST_CASE("software.context_parallel: ring by default, one line for a bad value", "[plan][cp]") {
  const std::string cluster =
      "nodes: 2\ndevices_per_node: 8\ndevice:\n  memory_gib: 80\n  memory_bandwidth_gbs: 3000\n"
      "  peak_tflops: {bf16: 989}\nlinks:\n  intra_node: {bandwidth_gbs: 200, latency_us: 2}\n"
      "  inter_node: {bandwidth_gbs: 10, latency_us: 5}\n";
  CHECK(parse_cluster_text(cluster, "c.yaml").software.context_parallel == "ring");
  CHECK(parse_cluster_text(cluster + "software: {context_parallel: allgather}\n", "c.yaml")
            .software.context_parallel == "allgather");
  CHECK(plan_test::cluster_error(cluster + "software: {context_parallel: ulysses}\n") ==
        "c.yaml: software.context_parallel: 'ulysses' is not valid (valid: ring, allgather)");
}
