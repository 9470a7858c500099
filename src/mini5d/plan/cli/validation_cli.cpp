// SPDX-License-Identifier: BSD-3-Clause
// mini5d-plan --validate FILE [--cluster FILE] [--rows fit|test|all] [--json|--rank|--breakdown]:
// the runs of a validation file against the planner, one line each (a Markdown table
// row, or a JSON record per line for perf/fit_cluster.py). --rows fit evaluates the fit
// rows only: what the fit script asks for, so that fitting never so much as computes a
// test row. --rank also runs the free search for each run (same GPUs, model, batch and
// the source's features, every degree tuple) and prints where the published layout
// (its best knobs, as evaluated) stands in it, and what makes #1 faster: the question
// "would the planner have chosen what practice chose?". With --json, one record per
// run per line either way. --breakdown prints each run's predicted step split into
// compute, bubble and exposed communication by axis, and its memory by category: where
// an error has to come from.
#include "mini5d/plan/cli/validation_cli.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "mini5d/plan/output/format.hpp"
#include "mini5d/plan/output/given_rank.hpp"
#include "mini5d/plan/search/given_layout.hpp"
#include "mini5d/plan/inputs/input_files.hpp"
#include "mini5d/plan/output/json.hpp"
#include "mini5d/plan/output/report.hpp"
#include "mini5d/plan/validation/validation.hpp"

namespace mini5d::plan {

namespace {

int usage(const std::string& msg) {
  std::cerr << "mini5d-plan: " << msg << "\nusage: mini5d-plan --validate FILE [--cluster FILE] "
               "[--rows fit|test|all] [--json | --rank | --breakdown]\n";
  return 1;
}

// The planner's layout, and when its memory model does not fit the published knobs,
// by how much (such a run is still costed: it ran).
std::string layout_text(const Plan& plan) {
  std::string s = describe(plan.layout);
  if (!plan.fits) s += " (does not fit the memory model: " + gib(plan.memory.total()) + ")";
  return s;
}

void print_row(const ValidationSet& v, const ValidationResult& res, bool json) {
  const ValidationRun& r = *res.run;
  const auto& g = r.degrees;
  char buf[1024];
  if (json) {
    std::snprintf(buf, sizeof buf,
                  "{\"file\": \"%s\", \"name\": \"%s\", \"role\": \"%s\", \"gpus\": %lld, "
                  "\"d\": %d, \"t\": %d, \"p\": %d, \"c\": %d, \"e\": %d, \"published_step\": %.6g, "
                  "\"predicted_step\": %.6g, \"error\": %.6g, \"fits\": %s, \"layout\": \"%s\"}\n",
                  v.path.c_str(), r.name.c_str(), r.fit ? "fit" : "test", r.gpus, g[0], g[1], g[2],
                  g[3], g[4], r.published_step, res.costed() ? res.predicted_step : -1.0,
                  res.costed() ? res.error : 0.0, res.plan && res.plan->fits ? "true" : "false",
                  res.plan ? describe(res.plan->layout).c_str() : "");
    std::string line = buf;  // the reason, when not costed, and the group, before the closing brace
    if (!v.group.empty()) line.insert(line.size() - 2, ", \"group\": \"" + json_escape(v.group) + "\"");
    if (!res.why.empty()) line.insert(line.size() - 2, ", \"why\": \"" + json_escape(res.why) + "\"");
    std::cout << line;
    return;
  } else if (res.costed()) {
    std::snprintf(buf, sizeof buf, "| %s | %s | %lld | %d | %d | %d | %d | %d | %.4g | %.4g | %+.1f%% | %s |\n",
                  r.name.c_str(), r.fit ? "fit" : "test", r.gpus, g[0], g[1], g[2], g[3], g[4],
                  r.published_step, res.predicted_step, 100 * res.error,
                  layout_text(*res.plan).c_str());
  } else {
    std::snprintf(buf, sizeof buf, "| %s | %s | %lld | %d | %d | %d | %d | %d | %.4g | not costed | | %s |\n",
                  r.name.c_str(), r.fit ? "fit" : "test", r.gpus, g[0], g[1], g[2], g[3], g[4],
                  r.published_step, res.why.c_str());
  }
  std::cout << buf;
}

// The run against its prediction, then the planner's plan split as --layout prints it.
void print_breakdown(const ValidationResult& res, const ClusterDesc& cl) {
  const ValidationRun& r = *res.run;
  char buf[512];
  std::snprintf(buf, sizeof buf, "%s (%lld GPUs, %s): published %.4g s", r.name.c_str(), r.gpus,
                r.fit ? "fit" : "test", r.published_step);
  std::cout << buf;
  if (!res.costed()) {
    std::cout << ", not costed: " << res.why << "\n\n";
    return;
  }
  std::snprintf(buf, sizeof buf, ", predicted %.4g s, error %+.1f%%\n", res.predicted_step, 100 * res.error);
  std::cout << buf;
  print_plan_detail(std::cout, *res.plan, cl, "planner's plan");
  std::cout << "\n";
}

// The free search with the published plan as the given one (the search's seconds too:
// thousands of GPUs make it the slow part).
struct Ranked {
  SearchResult sr;
  double seconds = 0;
};
Ranked rank_published(const ValidationRun& r, const Plan& published, const ClusterDesc& cluster,
                      const SearchOptions& options) {
  ClusterDesc cl = cluster;
  cl.nodes = (r.gpus + cl.devices_per_node - 1) / cl.devices_per_node;
  SearchOptions o = options;
  o.top = 1;
  o.given = &published;
  // The free search reaches the published knobs (e.g. NeMo's v = 12 beyond the default 8).
  o.max_micro_batch = std::max(o.max_micro_batch, r.pin_micro_batch);
  o.max_virtual_stages = std::max(o.max_virtual_stages, r.pin_virtual_stages);
  const auto t0 = std::chrono::steady_clock::now();
  Ranked k{search(r.model, r.train, cl, o), 0};
  k.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return k;
}

// Its rank line, as --layout prints it, under the run's name.
void print_rank(const ValidationRun& r, const ValidationResult& res, const ClusterDesc& cluster,
                const SearchOptions& options) {
  std::cout << r.name << " (" << r.gpus << " GPUs): ";
  if (!res.costed()) {
    std::cout << "not costed: " << res.why << "\n";
    return;
  }
  const Ranked k = rank_published(r, *res.plan, cluster, options);
  std::cout << describe(res.plan->layout) << "\n  ";
  print_given_rank(std::cout, *res.plan, k.sr, cluster);
  char buf[128];
  std::snprintf(buf, sizeof buf, "  search: %zu candidates, %.2f s\n", k.sr.candidates, k.seconds);
  std::cout << buf;
}

// The same as one JSON record per line: position 0 when the published degrees have no
// fitting plan (then no "published" layout) or its plan does not fit.
void print_rank_json(const ValidationSet& v, const ValidationResult& res, const ClusterDesc& cluster) {
  const ValidationRun& r = *res.run;
  std::ostringstream os;
  os << "{\"file\": \"" << json_escape(v.path) << "\", \"name\": \"" << json_escape(r.name)
     << "\", \"role\": \"" << (r.fit ? "fit" : "test") << "\", \"gpus\": " << r.gpus;
  if (res.costed()) {
    const Ranked k = rank_published(r, *res.plan, cluster, v.options);
    const GivenRank g = rank_of_given(k.sr);
    os << ", \"published\": \"" << json_escape(describe(res.plan->layout))
       << "\", \"published_step\": " << res.plan->time.step << ", \"fits\": "
       << (res.plan->fits ? "true" : "false") << ", \"position\": " << (res.plan->fits ? g.position : 0)
       << ", \"fitting\": " << g.fitting << ", \"candidates\": " << k.sr.candidates
       << ", \"search_seconds\": " << k.seconds;
    if (!k.sr.top.empty()) {
      const Plan& best = k.sr.top.front();
      os << ", \"best\": \"" << json_escape(describe(best.layout)) << "\", \"best_step\": " << best.time.step
         << ", \"slower_than_best\": " << res.plan->time.step / best.time.step - 1;
    }
  } else {
    os << ", \"position\": 0, \"why\": \"" << json_escape(res.why) << "\"";
  }
  std::cout << os.str() << "}\n";
}

}  // namespace

int validate_main(int argc, char** argv) {
  std::string file, cluster, rows = "all";
  bool json = false, rank = false, breakdown = false;
  for (int i = 1; i < argc; ++i) {
    const std::string f = argv[i];
    const bool has_value = i + 1 < argc;
    if (f == "--validate" && has_value) file = argv[++i];
    else if (f == "--cluster" && has_value) cluster = argv[++i];
    else if (f == "--rows" && has_value) rows = argv[++i];
    else if (f == "--json") json = true;
    else if (f == "--rank") rank = true;
    else if (f == "--breakdown") breakdown = true;
    else return usage("--validate: unknown option or missing value '" + f + "'");
  }
  if (file.empty()) return usage("--validate needs a file");
  if (breakdown && (json || rank)) return usage("--breakdown: text only, and not with --rank");
  if (rows != "fit" && rows != "test" && rows != "all")
    return usage("--rows: '" + rows + "' is not valid (valid: fit, test, all)");
  try {
    const ValidationSet v = load_validation_file(file);
    const ClusterDesc cl = load_cluster_file(cluster.empty() ? v.cluster_file : cluster);
    if (!json && !rank && !breakdown && !v.group.empty())
      std::cout << "group: " << v.group << " (reported apart, outside the per-run bound)\n";
    if (!json && !rank && !breakdown)
      std::cout << "| run | role | GPUs | d | t | p | c | e | published step (s) | predicted (s) | "
                   "error | planner's layout |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n";
    std::vector<std::string> broken;  // rows that break a layout rule: the file is wrong
    for (const ValidationRun& r : v.runs) {
      if ((rows == "fit" && !r.fit) || (rows == "test" && r.fit)) continue;
      const ValidationResult res = evaluate_run(r, cl, v.options);
      if (res.broken_rule) broken.push_back(file + ": run " + r.name + ": its degrees break a layout rule: " + res.why);
      if (breakdown) print_breakdown(res, cl);
      else if (rank && json) print_rank_json(v, res, cl);
      else if (rank) print_rank(r, res, cl, v.options);
      else print_row(v, res, json);
    }
    // After the table, so the other rows are still read; a mistyped row never drops out
    // silently.
    for (const auto& b : broken) std::cerr << "mini5d-plan: " << b << "\n";
    if (!broken.empty()) return 2;
  } catch (const InputError& e) {
    std::cerr << "mini5d-plan: " << e.what() << "\n";
    return 2;
  }
  return 0;
}

}  // namespace mini5d::plan
