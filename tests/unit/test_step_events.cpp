// SPDX-License-Identifier: BSD-3-Clause
// Budgets for a step shaped for a device, from the Kokkos events each step asks for
// (kernels/kokkos_events.hpp), on the tiny deck at one rank:
//   * after the first step, no allocation inside a step;
//   * no global fence inside a step (where this Kokkos reports fences);
//   * deep copies per step a constant, independent of layers and micro-batches (the
//     step's scalars travel together; a copy per layer would be a host round trip,
//     and a global fence, per layer on a GPU);
//   * kernel launches per layer independent of the batch and the head count (kernels
//     loop over rows and heads inside, never launch per row or per head);
//   * every kernel, region and allocation label is the project's own ("mini5d::"), so
//     Kokkos Tools and vendor profilers show a tree of the code's names.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "mini5d/core/deck.hpp"
#include "mini5d/kernels/kokkos_events.hpp"
#include "mini5d/train/trainer.hpp"

using namespace mini5d;

namespace {
const std::string kTiny = std::string(MINI5D_SOURCE_DIR) + "/inputs/tiny.yaml";

// The events of steps 2 and 3 of a 3-step run of the tiny deck with `overrides`
// (kernel profile on: the counters run whatever the backend).
std::vector<prof::KokkosEvents> steps_2_and_3(std::vector<std::string> overrides) {
  overrides.push_back("train.steps=3");
  overrides.push_back("output.kernel_profile=true");
  train::Trainer tr(load_deck(kTiny, overrides));
  tr.run();
  REQUIRE(tr.record().history.size() == 3);
  return {tr.record().history[1].events, tr.record().history[2].events};
}

std::string describe(const prof::KokkosEvents& e) {
  return std::to_string(e.launches) + " launches, " + std::to_string(e.copies()) + " copies, " +
         std::to_string(e.allocations) + " allocations, " + std::to_string(e.fences_global) + " global fences";
}
}  // namespace

TEST_CASE("a step allocates nothing after the first and never fences globally", "[events]") {
  for (const auto& e : steps_2_and_3({})) {
    INFO(describe(e) << "; global fences seen: " << prof::global_fence_labels(8));
    CHECK(e.launches > 0);  // the counters run
    CHECK(e.allocations == 0);
    CHECK(e.deallocations == 0);
    if (prof::fences_reported())
      CHECK(e.fences_global == 0);
    else
      WARN("this Kokkos (before 3.5) does not report fences to tools: the global-fence budget is not checked");
  }
}

TEST_CASE("deep copies per step do not grow with layers or micro-batches", "[events]") {
  const auto base = steps_2_and_3({})[1];
  const auto deeper = steps_2_and_3({"model.layers=4"})[1];
  const auto more_micro = steps_2_and_3({"train.accumulation=3"})[1];
  INFO("2 layers: " << describe(base) << "; 4 layers: " << describe(deeper) << "; 3 micro-batches: "
                    << describe(more_micro));
  CHECK(deeper.copies() == base.copies());
  CHECK(more_micro.copies() == base.copies());
  // A named region per unit and direction (mini5d::block3::forward, ...): two more
  // blocks, four more regions.
  CHECK(deeper.regions - base.regions == 4);
}

TEST_CASE("kernel launches per layer do not grow with the batch or the heads", "[events]") {
  // Launches of two more layers, at two batch sizes and two head counts.
  auto per_two_layers = [](std::vector<std::string> o) {
    const auto two = steps_2_and_3(o)[1].launches;
    o.push_back("model.layers=4");
    const auto four = steps_2_and_3(o)[1].launches;
    return four - two;
  };
  const auto base = per_two_layers({});
  const auto wider_batch = per_two_layers({"train.micro_batch=32"});
  const auto more_heads = per_two_layers({"model.heads=8"});
  INFO("launches per two layers: " << base << " (micro_batch 16, 4 heads), " << wider_batch << " (micro_batch 32), "
                                   << more_heads << " (8 heads)");
  CHECK(base > 0);
  CHECK(wider_batch == base);
  CHECK(more_heads == base);
}

TEST_CASE("every kernel, region and allocation carries a mini5d:: label", "[events]") {
  steps_2_and_3({});
  CHECK(prof::foreign_kernel_labels(100) == "");
  CHECK(prof::foreign_allocation_labels(100) == "");
}
