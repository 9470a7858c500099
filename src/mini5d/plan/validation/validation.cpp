// SPDX-License-Identifier: BSD-3-Clause
// Reading the validation files (inputs/validation/*.yaml) and evaluating their runs.
#include "mini5d/plan/validation/validation.hpp"

#include <cmath>
#include <string>

#include "mini5d/rules/deck_choices.hpp"
#include "mini5d/plan/inputs/input_files.hpp"
#include "mini5d/plan/inputs/yaml_fields.hpp"
#include "mini5d/plan/output/format.hpp"

namespace mini5d::plan {

namespace {

using namespace yaml_input;

// The run keys that change the source's model for one run (SC21 varies the shape).
const char* const kShapeKeys[] = {"d_model", "heads", "layers", "seq", "ffn", "kv_heads", "vocab"};

std::string dir_of(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

// A recomputation name, or one line naming `field` and the valid ones.
Recompute recompute_or_fail(const Fields& f, const std::string& field, const std::string& s) {
  Recompute rc = Recompute::none;
  if (!parse_choice(s, rc)) f.fail(field, "'" + s + "' is not valid (valid: none, selective, full)");
  return rc;
}

SearchOptions read_features(const Fields& f) {
  SearchOptions o;
  o.top = 1;
  const YAML::Node z = f.at("features.zero");
  if (z) {
    if (!z.IsSequence() || z.size() == 0) f.fail("features.zero", "expected a list of ZeRO stages in [0, 3]");
    o.zero_stages.clear();
    for (std::size_t i = 0; i < z.size(); ++i) {
      const int st = z[i].IsScalar() ? z[i].as<int>(-1) : -1;
      if (st < 0 || st > 3) f.fail("features.zero", "expected a list of ZeRO stages in [0, 3]");
      o.zero_stages.push_back(st);
    }
  }
  const YAML::Node r = f.at("features.recompute");
  if (r) {
    if (!r.IsSequence() || r.size() == 0) f.fail("features.recompute", "expected a list of none, selective, full");
    o.recomputes.clear();
    for (std::size_t i = 0; i < r.size(); ++i)
      o.recomputes.push_back(
          recompute_or_fail(f, "features.recompute", r[i].IsScalar() ? r[i].Scalar() : std::string("?")));
  }
  o.allow_sp = f.flag("features.sp", true);
  o.uneven_stages = f.flag("features.uneven_stages", true);
  o.max_c = f.integer("features.max_c", 1, 1LL << 40, "largest context-parallel degree", false, o.max_c);
  o.time.moe_imbalance = f.number("features.moe_imbalance", 1, 100, "busiest expert's load over the mean",
                                  false, 1.0);
  return o;
}

// The run's published knobs (optional keys mb, v, zero, recompute, sp).
void read_pins(const Fields& rf, ValidationRun& r) {
  const int t = r.degrees[1], p = r.degrees[2];
  r.pin_micro_batch = int(rf.integer("mb", 1, 1 << 20, "published micro-batch", false, 0));
  r.pin_virtual_stages = int(rf.integer("v", 1, 4096, "published virtual pipeline stages", false, 0));
  if (r.pin_virtual_stages > 1 && p == 1) rf.fail("v", std::to_string(r.pin_virtual_stages) + " needs p > 1");
  r.pin_zero = int(rf.integer("zero", 0, 3, "published ZeRO stage", false, -1));
  if (rf.has("recompute")) r.pin_recompute = recompute_or_fail(rf, "recompute", rf.text("recompute", ""));
  if (rf.has("sp")) {
    r.pin_sp = rf.flag("sp", false) ? 1 : 0;
    if (r.pin_sp == 1 && t == 1) rf.fail("sp", "true needs t > 1");
  }
}

}  // namespace

SearchOptions ValidationRun::options(const SearchOptions& features) const {
  SearchOptions o = features;
  o.pin_micro_batch = pin_micro_batch;
  o.pin_virtual_stages = pin_virtual_stages;
  if (pin_zero >= 0) o.zero_stages = {pin_zero};
  if (pin_recompute) o.recomputes = {*pin_recompute};
  if (pin_sp >= 0) {
    o.pin_sp = pin_sp;
    o.allow_sp = o.allow_sp || pin_sp == 1;
  }
  return o;
}

ValidationSet load_validation_file(const std::string& path) {
  const YAML::Node root = parse(read_file(path), path);
  const Fields f(root, path);
  f.check_keys({{"", {"source", "cluster", "published", "precision", "features", "model", "runs", "group"}},
                {"features", {"zero", "recompute", "sp", "uneven_stages", "max_c", "moe_imbalance"}}},
               "validation file");
  ValidationSet v;
  v.path = path;
  v.source = f.text("source", "");
  if (v.source.empty()) f.fail("source", "missing (the citation the numbers come from)");
  const std::string cl = f.text("cluster", "");
  if (cl.empty()) f.fail("cluster", "missing (a file in inputs/clusters/)");
  v.cluster_file = dir_of(path) + "/../clusters/" + cl;
  const std::string unit = f.text("published", "");
  if (unit != "step_s" && unit != "tflops_eq3" && unit != "tflops_palm")
    f.fail("published", "'" + unit + "' is not valid (valid: step_s, tflops_eq3, tflops_palm)");
  const std::string prec = f.text("precision", "bf16");
  v.options = read_features(f);
  v.group = f.text("group", "");
  if (!root["model"] || !root["model"].IsMap()) f.fail("model", "missing section (the model's shape)");
  const YAML::Node runs = root["runs"];
  if (!runs || !runs.IsSequence() || runs.size() == 0) f.fail("runs", "missing or empty list of runs");

  for (std::size_t i = 0; i < runs.size(); ++i) {
    const std::string field = "runs[" + std::to_string(i) + "]";
    const Fields rf(runs[i], path + ": " + field);
    rf.check_keys({{"", {"name", "role", "gpus", "t", "p", "c", "e", "batch", "step_s", "tflops_per_gpu",
                         "params_b", "hidden", "d_model", "heads", "layers", "seq", "ffn", "kv_heads", "vocab",
                         "mb", "v", "zero", "recompute", "sp"}}},
                  "validation run");
    ValidationRun r;
    r.name = rf.text("name", "");
    if (r.name.empty()) rf.fail("name", "missing (a label for the tables)");
    const std::string role = rf.text("role", "");
    if (role != "fit" && role != "test") rf.fail("role", "'" + role + "' is not valid (valid: fit, test)");
    r.fit = role == "fit";
    r.gpus = rf.integer("gpus", 1, 10000000, "GPUs of the run");
    const int t = int(rf.integer("t", 1, 4096, "tensor degree", false, 1));
    const int p = int(rf.integer("p", 1, 4096, "pipeline degree", false, 1));
    const int c = int(rf.integer("c", 1, 4096, "context degree", false, 1));
    const int e = int(rf.integer("e", 1, 4096, "expert degree", false, 1));
    const long long tpce = 1LL * t * p * c * e;
    if (r.gpus % tpce) rf.fail("gpus", std::to_string(r.gpus) + " is not a multiple of t*p*c*e = " + std::to_string(tpce));
    r.degrees = {int(r.gpus / tpce), t, p, c, e};
    read_pins(rf, r);
    const long long batch = rf.integer("batch", 1, 2147483647LL, "sequences per step");
    const long long de = 1LL * r.degrees[0] * e;
    if (r.pin_micro_batch > 0 && (batch % de != 0 || (batch / de) % r.pin_micro_batch != 0))
      rf.fail("mb", std::to_string(r.pin_micro_batch) + " does not divide the sequences per data-parallel rank (batch " +
                        std::to_string(batch) + " over d*e = " + std::to_string(de) + ")");

    // The run's model: the file's model section with the run's shape keys over it.
    YAML::Node model = YAML::Clone(root["model"]);
    for (const char* k : kShapeKeys)
      if (runs[i][k]) model[k] = runs[i][k];
    if (runs[i]["hidden"]) model["d_model"] = runs[i]["hidden"];  // SC21's name for d_model
    if (!model["ffn"] && model["d_model"]) model["ffn"] = 4 * model["d_model"].as<long long>();
    YAML::Node deck;
    deck["model"] = model;
    deck["train"]["global_batch"] = batch;
    deck["train"]["precision"] = prec;
    YAML::Emitter out;
    out << deck;
    const ModelInput in = parse_model_text(out.c_str(), path + ": " + field);
    r.model = in.model;
    r.train = in.train;
    validate_model(r.model, r.train);

    const double s = double(r.model.seq), V = double(r.model.vocab);
    const double h = double(r.model.d_model), l = double(r.model.layers), B = double(batch);
    if (unit == "step_s") {
      r.published = rf.number("step_s", 1e-6, 1e7, "published seconds per step");
      r.published_step = r.published;
    } else {
      r.published = rf.number("tflops_per_gpu", 1e-3, 1e5, "published TFLOP/s per GPU");
      const double flops = unit == "tflops_eq3"
                               ? 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h))
                               : model_flops_per_step(r.model, B * s, t);
      r.published_step = flops / (r.published * 1e12 * double(r.gpus));
    }
    v.runs.push_back(r);
  }
  return v;
}

namespace {

// The first layout rule every knob set of the run's degrees breaks (called when none
// is valid). (for_each_knob_set yields nothing for a batch that d x e does not divide, or a
// pipeline deeper than the layers: those are named here first.)
std::string rule_broken(const ValidationRun& r, const ClusterDesc& cl, const SearchOptions& o) {
  const Degrees& g = r.degrees;
  const long long de = 1LL * g[0] * g[4];
  if (r.train.global_batch % de)
    return "the global batch of " + std::to_string(r.train.global_batch) + " sequences is not a multiple of d x e = " +
           std::to_string(de);
  if (r.model.layers < g[2])
    return "p = " + std::to_string(g[2]) + " stages for " + std::to_string(r.model.layers) + " layers";
  std::string why;
  bool visited = false, valid = false;
  for_each_knob_set(r.model, r.train, g, o, [&](const Layout& l) {
    visited = true;
    if (valid) return;
    const auto problems = check_layout(r.model, r.train, cl, l, o.rules);
    if (problems.empty()) valid = true;
    for (const auto& s : problems)
      if (why.empty() && s.rfind("redundant", 0) != 0) why = s;  // a redundant spelling is no reason
  });
  if (valid) return "a valid knob set that the search could not cost";  // not reached: the caller found none
  if (!visited) return "no micro-batch, virtual-stage and schedule setting is possible for these degrees";
  return why.empty() ? "every knob set is redundant" : why;
}

}  // namespace

ValidationResult evaluate_run(const ValidationRun& r, const ClusterDesc& cluster,
                              const SearchOptions& o) {
  ValidationResult res;
  res.run = &r;
  ClusterDesc cl = cluster;
  cl.nodes = (r.gpus + cl.devices_per_node - 1) / cl.devices_per_node;
  const SearchOptions pinned = r.options(o);
  res.plan = best_for_degrees(r.model, r.train, cl, r.degrees, pinned);
  // No fitting plan: the one needing the least memory. A run whose knobs are published
  // ran with them, so within kNotRunMemoryFactor it is costed anyway (Plan::fits says
  // it does not fit; memory is not validated); a run with knobs searched is not.
  if (!res.plan) res.plan = best_for_degrees(r.model, r.train, cl, r.degrees, pinned, false);
  if (!res.plan) {  // no valid knob set at all
    res.why = rule_broken(r, cl, pinned);
    res.broken_rule = true;
    return res;
  }
  if (!res.plan->fits) {
    const double need = res.plan->memory.total(), have = cl.device.usable_memory();
    if (need > kNotRunMemoryFactor * have)
      res.why = "does not fit: needs " + gib(need) + " per device of " + gib(have) + " usable, more than " +
                fixed(kNotRunMemoryFactor, 1) + "x";
    else if (!r.pinned())
      res.why = "does not fit: the least memory a knob set needs is " + gib(need) + " per device of " + gib(have) +
                " usable";
  }
  if (res.costed()) {
    res.predicted_step = res.plan->time.step;
    res.error = r.published_step / res.predicted_step - 1;
  }
  return res;
}

}  // namespace mini5d::plan
