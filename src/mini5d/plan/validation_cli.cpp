// SPDX-License-Identifier: BSD-3-Clause
// mini5d-plan --validate FILE [--cluster FILE] [--rows fit|test|all] [--json]: the runs
// of a validation file against the planner, one line each (a Markdown table row, or a
// JSON record per line for perf/fit_cluster.py). --rows fit evaluates the fit rows only:
// what the fit script asks for, so that fitting never so much as computes a test row.
#include "mini5d/plan/validation_cli.hpp"

#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>

#include "mini5d/plan/input_files.hpp"
#include "mini5d/plan/validation.hpp"

namespace mini5d::plan {

namespace {

int usage(const std::string& msg) {
  std::cerr << "mini5d-plan: " << msg << "\nusage: mini5d-plan --validate FILE [--cluster FILE] "
               "[--rows fit|test|all] [--json]\n";
  return 1;
}

void print_row(const ValidationSet& v, const ValidationResult& res, bool json) {
  const ValidationRun& r = *res.run;
  const auto& g = r.degrees;
  char buf[1024];
  if (json) {
    std::snprintf(buf, sizeof buf,
                  "{\"file\": \"%s\", \"name\": \"%s\", \"role\": \"%s\", \"gpus\": %lld, "
                  "\"d\": %d, \"t\": %d, \"p\": %d, \"c\": %d, \"e\": %d, \"published_step\": %.6g, "
                  "\"predicted_step\": %.6g, \"error\": %.6g, \"layout\": \"%s\"}\n",
                  v.path.c_str(), r.name.c_str(), r.fit ? "fit" : "test", r.gpus, g[0], g[1], g[2],
                  g[3], g[4], r.published_step, res.plan ? res.predicted_step : -1.0,
                  res.plan ? res.error : 0.0, res.plan ? describe(res.plan->layout).c_str() : "");
  } else if (res.plan) {
    std::snprintf(buf, sizeof buf, "| %s | %s | %lld | %d | %d | %d | %d | %d | %.4g | %.4g | %+.1f%% | %s |\n",
                  r.name.c_str(), r.fit ? "fit" : "test", r.gpus, g[0], g[1], g[2], g[3], g[4],
                  r.published_step, res.predicted_step, 100 * res.error,
                  describe(res.plan->layout).c_str());
  } else {
    std::snprintf(buf, sizeof buf, "| %s | %s | %lld | %d | %d | %d | %d | %d | %.4g | no fitting plan | | |\n",
                  r.name.c_str(), r.fit ? "fit" : "test", r.gpus, g[0], g[1], g[2], g[3], g[4],
                  r.published_step);
  }
  std::cout << buf;
}

}  // namespace

int validate_main(int argc, char** argv) {
  std::string file, cluster, rows = "all";
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    const std::string f = argv[i];
    const bool has_value = i + 1 < argc;
    if (f == "--validate" && has_value) file = argv[++i];
    else if (f == "--cluster" && has_value) cluster = argv[++i];
    else if (f == "--rows" && has_value) rows = argv[++i];
    else if (f == "--json") json = true;
    else return usage("--validate: unknown option or missing value '" + f + "'");
  }
  if (file.empty()) return usage("--validate needs a file");
  if (rows != "fit" && rows != "test" && rows != "all")
    return usage("--rows: '" + rows + "' is not valid (valid: fit, test, all)");
  try {
    const ValidationSet v = load_validation_file(file);
    const ClusterDesc cl = load_cluster_file(cluster.empty() ? v.cluster_file : cluster);
    if (!json)
      std::cout << "| run | role | GPUs | d | t | p | c | e | published step (s) | predicted (s) | "
                   "error | planner's layout |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n";
    for (const ValidationRun& r : v.runs) {
      if ((rows == "fit" && !r.fit) || (rows == "test" && r.fit)) continue;
      print_row(v, evaluate_run(r, cl, v.options), json);
    }
  } catch (const InputError& e) {
    std::cerr << "mini5d-plan: " << e.what() << "\n";
    return 2;
  }
  return 0;
}

}  // namespace mini5d::plan
