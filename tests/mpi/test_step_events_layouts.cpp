// SPDX-License-Identifier: BSD-3-Clause
// The step's event budgets (test_step_events, one rank) on the parallel axes, at 4
// ranks: each layout puts one axis above 1 (t, p, c, e, ZeRO 3) beside d = 2, so the
// axis's own copies and fences run: the tensor row gathers, the pipeline's sends and
// receives, the context ring's K/V packing, the expert all-to-all, ZeRO-3's weight
// gathers and gradient reduce-scatters. On every rank, for steps 2 and 3:
//   * no global fence (where this Kokkos reports fences to tools: 3.5 on). A fence on
//     the rank's execution space instance waits for that rank's queue only; a global
//     one (Kokkos::fence, or a deep_copy given no execution space) drains every queue
//     of the device and on a GPU stalls the kernels and copies other streams overlap;
//   * no allocation or deallocation after the first step.
// The expert layout is the one exception, and it is bounded: the buffers of the routed
// rows follow the router and grow (with 25% headroom, model/moe_layer.cpp) when a step
// routes more rows to or from a rank than any step before, so a later step may replace a
// few. Each replacement frees the outgrown buffer, and Kokkos fences globally before it
// frees device memory (HostSpace::impl_deallocate on the host). There the budget is: as
// many allocations as deallocations (replaced, none kept), and no global fence but
// those frees'; a step that grows nothing has none.
// A failure names the layout, the rank and the labels of the global fences seen.
#include <mpi.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "mini5d/kernels/kokkos_events.hpp"
#include "mini5d/train/trainer.hpp"
#include "layouts.hpp"
#include "mpi_util.hpp"

using namespace mini5d;
using test::Layout;

namespace {
// Steps 2 and 3 of a 3-step run of `l` over the world (kernel profile on: the counters
// run whatever the backend).
std::vector<prof::KokkosEvents> steps_2_and_3(const Layout& l, bool experts) {
  const std::vector<std::string> extra = {"output.kernel_profile=true", "checkpoint.every=0",
                                          "checkpoint.at_end=false"};
  const Deck deck = experts ? test::moe_tiny(l, 3, extra) : test::tiny(l, 3, extra);
  train::Trainer tr(deck, MPI_COMM_WORLD);
  tr.run();
  REQUIRE(tr.record().history.size() == 3);
  return {tr.record().history[1].events, tr.record().history[2].events};
}
}  // namespace

TEST_CASE("no global fence and no allocation in a step on any axis, at 4 ranks", "[events][mpi]") {
  REQUIRE(test::world_size() == 4);
  struct Case {
    Layout layout;
    bool experts;
  };
  const std::vector<Case> cases = {
      {"d2 t2", false}, {"d2 p2", false}, {"d2 c2", false}, {"d2 e2", true}, {"d2 t2 zero3", false}};
  for (const auto& [layout, experts] : cases) {
    const auto steps = steps_2_and_3(layout, experts);
    for (std::size_t s = 0; s < steps.size(); ++s) {
      const auto& e = steps[s];
      INFO(layout.name() << ", rank " << test::world_rank() << ", step " << s + 2 << ": " << e.launches
                         << " launches, " << e.allocations << " allocations, " << e.fences_global
                         << " global fences (" << prof::global_fence_labels(8) << ")");
      // Agreed over the ranks, so that every rank asserts the same thing; INFO says whose.
      CHECK(test::all_ranks(e.launches > 0));  // the counters run
      if (experts) {
        CHECK(test::all_ranks(e.allocations == e.deallocations));
        if (prof::fences_reported()) CHECK(test::all_ranks(e.fences_global <= e.deallocations));
      } else {
        CHECK(test::all_ranks(e.allocations == 0 && e.deallocations == 0));
        if (prof::fences_reported()) CHECK(test::all_ranks(e.fences_global == 0));
      }
    }
  }
  if (!prof::fences_reported())
    WARN("this Kokkos (before 3.5) does not report fences to tools: the global-fence budget is not checked");
}
