// SPDX-License-Identifier: BSD-3-Clause
// The goodput model against published failure figures (inputs/validation/failures/
// large-runs.yaml): the fit row gives Meta's cluster file its node MTBF, and the test
// rows stay within the bounds the file states. Every bound check fails on NaN.
#include <catch2/catch.hpp>

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <sstream>
#include <string>

#include "compare.hpp"
#include "mini5d/plan/inputs/input_files.hpp"
#include "mini5d/core/deck.hpp"
#include "mini5d/plan/output/emit_deck.hpp"
#include "mini5d/plan/output/goodput_plan.hpp"
#include "mini5d/plan/search/given_layout.hpp"
#include "plan_test_util.hpp"

using namespace mini5d::plan;

namespace {
constexpr double kMtbfFactor = 2.5;  // the file's bound for interruption rows

// Job MTBF in hours of an interruptions row.
double published_job_mtbf_h(const YAML::Node& r) {
  return r["days"].as<double>() * 24 / r["interruptions"].as<double>();
}
double nodes_of(const YAML::Node& r) { return r["gpus"].as<double>() / r["gpus_per_node"].as<double>(); }
}  // namespace

TEST_CASE("published failure rows: the fit row sets the node MTBF, the test rows keep their bounds",
          "[plan][goodput]") {
  const YAML::Node file = YAML::LoadFile(plan_test::input("validation/failures/large-runs.yaml"));
  // The node MTBF from the fit rows: node-hours over interruptions.
  double node_hours = 0, interruptions = 0;
  for (const YAML::Node& r : file["rows"])
    if (r["role"].as<std::string>() == "fit") {
      node_hours += nodes_of(r) * r["days"].as<double>() * 24;
      interruptions += r["interruptions"].as<double>();
    }
  const double node_mtbf_h = node_hours / interruptions;
  const ClusterDesc meta = load_cluster_file(plan_test::input("clusters/meta-h100-roce-8.yaml"));
  CHECK(mini5d::test::abs_error(meta.node_mtbf_hours, std::round(node_mtbf_h)) == 0);

  int tested = 0;
  for (const YAML::Node& r : file["rows"]) {
    if (r["role"].as<std::string>() != "test") continue;
    const std::string name = r["name"].as<std::string>();
    INFO(name);
    ++tested;
    if (r["interruptions"]) {
      const double predicted = node_mtbf_h / nodes_of(r), published = published_job_mtbf_h(r);
      const double factor = mini5d::test::worse(predicted / published, published / predicted);
      std::printf("%s: job MTBF predicted %.1f h, published %.1f h (factor %.2f, bound %.1f)\n", name.c_str(),
                  predicted, published, factor, kMtbfFactor);
      CHECK(mini5d::test::worse(0, factor) <= kMtbfFactor);
      continue;
    }
    const ModelInput in = load_model_file(plan_test::input(r["model"].as<std::string>()));
    ClusterDesc cl = load_cluster_file(plan_test::input(r["cluster"].as<std::string>()));
    cl.nodes = r["nodes"].as<long long>();
    const Layout l = complete_layout(parse_layout_spec(r["layout"].as<std::string>()), in.train, cl.devices());
    const PlanGoodput g = plan_goodput(in.model, cl, evaluate(in.model, in.train, cl, l, SearchOptions{}));
    REQUIRE(g.available);
    const double floor = r["effective_time_at_least"].as<double>();
    std::printf("%s: predicted ETTR %.3f every %lld steps, published more than %.2f\n", name.c_str(), g.ettr,
                g.interval_steps, floor);
    CHECK(std::isfinite(g.ettr));
    CHECK(g.ettr >= floor);
    CHECK(g.ettr < 1);
  }
  CHECK(tested == 2);
}

TEST_CASE("the emitted deck carries the cluster file's node MTBF: checkpoint.every=auto loads from it", "[plan][goodput]") {
  const ModelInput in = load_model_file(plan_test::input("models/llama3-405b.yaml"));
  ClusterDesc cl = load_cluster_file(plan_test::input("clusters/meta-h100-roce-8.yaml"));
  cl.nodes = 2048;
  const Layout l = complete_layout(parse_layout_spec("t=8,p=16,mb=1,zero=1,recompute=selective,sp=on"), in.train,
                                   cl.devices());
  std::ostringstream os;
  write_deck(os, in, cl, evaluate(in.model, in.train, cl, l, SearchOptions{}), false);
  const mini5d::Deck fixed = mini5d::parse_deck(os.str(), "emitted.yaml");
  CHECK(fixed.checkpoint.node_mtbf_hours == cl.node_mtbf_hours);
  CHECK(fixed.checkpoint.every > 0);
  CHECK(mini5d::parse_deck(os.str(), "emitted.yaml", {"checkpoint.every=auto"}).checkpoint.every_auto);
}

TEST_CASE("reliability and read-rate fields: each out-of-range value is one line naming field and range",
          "[plan][goodput]") {
  auto error_of = [](const std::string& extra) -> std::string {
    try {
      plan_test::toy_cluster(2, 4, 80, 100, 10, extra);
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  };
  CHECK(error_of("reliability:\n  node_mtbf_hours: 0\n") ==
        "toy.yaml: reliability.node_mtbf_hours: 0 is out of range (one node's mean time between job-stopping "
        "failures, hours; valid: a number in [1, 1e+08])");
  CHECK_THAT(error_of("reliability:\n  requeue_s: -5\n"),
             Catch::StartsWith("toy.yaml: reliability.requeue_s: -5 is out of range"));
  CHECK_THAT(error_of("filesystem:\n  read_gbs: nan\n"), Catch::StartsWith("toy.yaml: filesystem.read_gbs: "));
  CHECK_THAT(error_of("reliability:\n  node_mtbf_hour: 5\n"),
             Catch::Contains("reliability.node_mtbf_hour: unknown field"));
  // Without a node MTBF the plan has no goodput, and says which field is missing.
  const ClusterDesc cl = plan_test::toy_cluster(2, 4, 80, 100, 10, "filesystem:\n  write_gbs: 10\n");
  CHECK(cl.node_mtbf_hours == 0);
}
