// SPDX-License-Identifier: BSD-3-Clause
// The planner out of sample: every published run of inputs/validation/ evaluated with
// the cluster files perf/fit_cluster.py wrote from the `fit` runs alone, and the `test`
// runs (never used to fit anything) held to bounds fixed before any test run was
// evaluated: each within kEachBound, the mean |error| within kMeanBound, and the errors
// not all of one sign (a planner that is off one way everywhere has a missing cost, even
// when each error is small). The fit runs are printed beside them, not bounded here
// (megatron-sc21.yaml's own test bounds those).
//
// Two of the three bounds are met (docs/planner.md, "Out of sample"): the mean and the
// mixed signs. The per-run bound is not met by four runs, which the docs name. MT-NLG's
// three ran another framework (DeepSpeed's pipeline engine) and are reported in their own
// group, outside the per-run bound (a grouping decided after their errors were seen, as
// the docs say); the fourth is listed here (kKnownMisses) so that the bound stays as
// written and every other run is held to it. Each known miss is held to the worst error the docs state, and must still
// miss: one that comes within the bound is a doc claim gone stale, so it fails until
// taken off the list and out of docs/planner.md. Both cases run in CTest's
// plan.out_of_sample (label plan), as part of the README's test command.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <iterator>
#include <string>
#include <vector>

#include "compare.hpp"
#include "mini5d/plan/inputs/input_files.hpp"
#include "mini5d/plan/validation/validation.hpp"
#include "plan_test_util.hpp"

using namespace mini5d::plan;

namespace {
// Fixed before the test rows were first evaluated; not to be loosened.
constexpr double kEachBound = 0.20;  // |published/predicted throughput - 1| per test run
constexpr double kMeanBound = 0.10;  // mean |error| over the test runs

// What docs/planner.md ("Out of sample") states of the measurement; the test fails when
// the planner moves away from it, so the docs change with it.
constexpr std::size_t kTestRuns = 27;  // test runs over all sources
constexpr double kDocWorst = 0.2505;   // the worst |error|, "+25.0%" to one decimal
// The runs the docs name as beyond kEachBound (LUMI's 7B row). The runs of a file with a
// `group:` (MT-NLG's three, "other framework (DeepSpeed pipeline engine)") are reported
// apart and are outside that bound; they stay in the mean and the worst.
const char* const kKnownMisses[] = {"validation/lumi-megatron-deepspeed.yaml: 7b-4-nodes"};
constexpr std::size_t kGroupedRuns = 3;

const char* const kSources[] = {"validation/megatron-sc21.yaml",
                                "validation/megatron-turing-530b.yaml",
                                "validation/llama3-405b.yaml",
                                "validation/mixtral-8x22b-mcore.yaml",
                                "validation/korthikanti-2022.yaml",
                                "validation/korthikanti-2022-full-recompute.yaml",
                                "validation/dgxc-h100-llama31.yaml",
                                "validation/dgxc-h100-nemotron4.yaml",
                                "validation/dgxc-h100-gpt3.yaml",
                                "validation/lumi-megatron-deepspeed.yaml"};

// Every run of every source evaluated once, the tables printed as they go; the test
// runs' errors returned.
struct TestErrors {
  std::vector<std::string> names;
  std::vector<double> errors;
  std::vector<std::string> groups;  // "" or the file's group
};
const TestErrors& evaluate_sources() {
  static const TestErrors out = [] {
    TestErrors t;
    for (const char* src : kSources) {
      const ValidationSet v = load_validation_file(plan_test::input(src));
      const ClusterDesc cl = load_cluster_file(v.cluster_file);
      if (!v.group.empty()) std::printf("group: %s (outside the per-run bound)\n", v.group.c_str());
      std::printf("%s (%s)\n| run | role | GPUs | d,t,p,c,e | published step (s) | predicted (s) | error |\n"
                  "|---|---|---|---|---|---|---|\n", src, v.source.c_str());
      for (const ValidationRun& r : v.runs) {
        INFO(src << ": " << r.name);
        const ValidationResult res = evaluate_run(r, cl, v.options);
        REQUIRE(res.plan);  // costed, even where its published knobs do not fit the memory model
        const auto& g = r.degrees;
        std::printf("| %s | %s | %lld | %d,%d,%d,%d,%d | %.4g | %.4g | %+.1f%% |\n", r.name.c_str(),
                    r.fit ? "fit" : "test", r.gpus, g[0], g[1], g[2], g[3], g[4], r.published_step,
                    res.predicted_step, 100 * res.error);
        if (r.fit) continue;
        t.names.push_back(std::string(src) + ": " + r.name);
        t.errors.push_back(res.error);
        t.groups.push_back(v.group);
      }
    }
    return t;
  }();
  return out;
}
}  // namespace

TEST_CASE("held-out published runs: mean |error| and mixed signs within the bounds fixed before they were seen",
          "[plan][validation][out-of-sample]") {
  const std::vector<double>& e = evaluate_sources().errors;
  REQUIRE(e.size() == kTestRuns);
  double mean = 0, worst = 0;
  int positive = 0;
  for (double x : e) {
    mean += std::fabs(x) / double(e.size());
    worst = mini5d::test::worse(worst, std::fabs(x));
    positive += x > 0;
  }
  std::printf("test runs: %zu, mean |error| %.1f%% (bound %.0f%%), worst %.1f%% (bound %.0f%%), "
              "%d optimistic\n", e.size(), 100 * mean, 100 * kMeanBound, 100 * worst,
              100 * kEachBound, positive);
  CHECK(mean <= kMeanBound);
  CHECK(positive > 0);
  CHECK(positive < int(e.size()));
  CHECK(worst <= kDocWorst);  // worse() made a NaN error +inf, so this fails on one
}

TEST_CASE("held-out published runs: each within the bound fixed before they were seen, but the one "
          "the docs name and the other framework's group", "[plan][validation][out-of-sample]") {
  const TestErrors& t = evaluate_sources();
  std::size_t misses_seen = 0, grouped = 0;
  for (std::size_t i = 0; i < t.errors.size(); ++i) {
    INFO(t.names[i] << ": error " << 100 * t.errors[i] << "%");
    const double err = std::fabs(t.errors[i]);
    if (!t.groups[i].empty()) {  // reported apart, held to the docs' worst only
      ++grouped;
      std::printf("%s: %+.1f%% (group: %s)\n", t.names[i].c_str(), 100 * t.errors[i], t.groups[i].c_str());
      CHECK(mini5d::test::worse(0, err) <= kDocWorst);
      continue;
    }
    bool known = false;
    for (const char* name : kKnownMisses) known = known || t.names[i] == name;
    if (!known) {
      CHECK(err <= kEachBound);  // false on NaN
      continue;
    }
    ++misses_seen;
    CHECK(err > kEachBound);  // still a miss, as the docs say (false on NaN)
    CHECK(err <= kDocWorst);
  }
  CHECK(misses_seen == std::size(kKnownMisses));  // each listed run still exists
  CHECK(grouped == kGroupedRuns);
}

TEST_CASE("a validation file's mistakes are one line naming the file and the field",
          "[plan][validation]") {
  const std::string bad = plan_test::input("validation/megatron-turing-530b.yaml");
  ValidationSet v = load_validation_file(bad);
  REQUIRE(v.runs.size() == 3);
  // The published step of an step_s file is the number itself; d from the GPUs left.
  CHECK(v.runs[0].published_step == 60.1);
  CHECK(v.runs[0].degrees == Degrees{8, 8, 35, 1, 1});
  CHECK(v.runs[2].degrees == Degrees{12, 8, 35, 1, 1});
  // tflops_palm: the planner's model FLOPs over TFLOP/s x GPUs, by hand for the 8K run:
  // N = matmul weights of Llama 3 405B (planner's count), 6 N + 12 l s h per token.
  const ValidationSet l = load_validation_file(plan_test::input("validation/llama3-405b.yaml"));
  const ValidationRun& r = l.runs[0];
  const double N = count_params(r.model, 8).matmul_active;
  const double per_token = 6 * N + 12.0 * 126 * 8192 * 16384;
  CHECK(r.published_step == Approx(2048.0 * 8192 * per_token / (430e12 * 8192)).epsilon(1e-12));
  CHECK(r.degrees == Degrees{64, 8, 16, 1, 1});
  CHECK(l.runs[2].degrees == Degrees{8, 8, 16, 16, 1});
  CHECK(l.runs[2].model.seq == 131072);
  CHECK_THROWS_WITH(load_validation_file(plan_test::input("no/such/file.yaml")),
                    Catch::Contains("no/such/file.yaml"));
}
