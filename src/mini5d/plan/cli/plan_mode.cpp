// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/plan/cli/plan_mode.hpp"

#include <cstdio>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "mini5d/rules/deck_choices.hpp"
#include "mini5d/core/printable.hpp"
#include "mini5d/core/regular_file.hpp"
#include "mini5d/plan/cli/plan_options.hpp"
#include "mini5d/plan/cost/axis_traffic.hpp"
#include "mini5d/plan/inputs/input_files.hpp"
#include "mini5d/plan/output/emit_deck.hpp"
#include "mini5d/plan/output/emit_slurm.hpp"
#include "mini5d/plan/output/explain.hpp"
#include "mini5d/plan/output/format.hpp"
#include "mini5d/plan/output/json.hpp"
#include "mini5d/plan/output/report.hpp"
#include "mini5d/plan/output/given_rank.hpp"
#include "mini5d/plan/search/given_layout.hpp"
#include "mini5d/plan/search/search.hpp"
#include "mini5d/plan/validation/sanity_notes.hpp"
#include "mini5d/plan/validation/tune.hpp"

namespace mini5d::plan {

namespace {

// Writes through `write` to FILE or stdout ('-').
template <class W>
void write_to(const std::string& path, W&& write) {
  // Rendered first: a writer that refuses its input leaves no file behind.
  std::ostringstream text;
  write(text);
  if (path == "-") {
    std::cout << text.str();
    return;
  }
  // A FIFO or device is refused, not opened: opening a FIFO for writing waits for a
  // reader for ever (core/regular_file.hpp).
  if (const std::string why = mini5d::write_regular_file(path, text.str()); !why.empty())
    throw InputError(path + ": cannot write file (" + why + ")");
}

// The given layout's memory per rank and payload bytes per step by axis, per pipeline
// stage, in the runtime's accounting (plan/cost/axis_traffic.hpp): what `mini5d train`
// prints beside its measurements for the same deck. Every block is MoE when the model
// has experts (the planner's model).
void print_stage_bytes(std::ostream& os, const ModelDesc& m, const TrainDesc& tr,
                       const ClusterDesc& cl, const Layout& l, const SearchOptions& o) {
  os << "per rank, by pipeline stage: training state and activations (bytes), and payload bytes per step by axis\n"
     << "  stage   weights     grads optimizer activations          t          c          e          p          d  d (experts)\n";
  for (int stage = 0; stage < l.p; ++stage) {
    const MemoryBreakdown mem = stage_memory(m, tr, cl, l, stage, o.memory);
    const ShardParams sp = stage_params(m, l, stage);
    const AxisTraffic a = step_traffic(m, l, stage, 1, sp.dense, sp.expert, activation_elem_bytes(tr.precision));
    char line[320];
    std::snprintf(line, sizeof line, "  %5d %9.0f %9.0f %9.0f %11.0f %10.0f %10.0f %10.0f %10.0f %10.0f %10.0f\n", stage,
                  mem.weights, mem.grads, mem.optimizer, mem.activations, a.tp(), a.cp_activations,
                  a.ep_activations, a.pp(), a.dp(), a.dp_expert());
    os << line;
  }
}

// The model and cluster descriptions with the command line's overrides, checked
// against each other.
void load_inputs(PlanArgs& a, ModelInput& in, ClusterDesc& cl) {
  in = load_model_file(a.model);
  cl = load_cluster_file(a.cluster);
  if (a.nodes) cl.nodes = a.nodes;
  if (!a.slurm_account.empty()) cl.slurm_account = a.slurm_account;
  if (!a.slurm_partition.empty()) cl.slurm_partition = a.slurm_partition;
  if (!a.slurm_mpi.empty()) cl.slurm_mpi = a.slurm_mpi;
  if (a.global_batch) in.train.global_batch = a.global_batch;
  if (!a.overlap_given && cl.software.overlap_efficiency >= 0)
    a.opt.time.overlap_efficiency = cl.software.overlap_efficiency;
  if (!a.precision.empty() && !parse_choice(a.precision, in.train.precision))
    usage_error("--precision: '" + a.precision + "' (valid: fp32, bf16, fp64)");
  validate_cluster(cl);
  validate_model(in.model, in.train);
  if (cl.device.sustained[precision_index(in.train.precision)] <= 0)
    throw InputError(cl.source + ": device.peak_tflops." +
                           to_string(in.train.precision) + ": missing (the device has no " +
                           to_string(in.train.precision) +
                           " rate; choose another --precision)");
  if (a.opt.time.moe_imbalance < 0) a.opt.time.moe_imbalance = in.model.moe() ? 1.1 : 1.0;
  a.opt.memory.moe_imbalance = a.opt.time.moe_imbalance;
}

// A given layout (--layout, --deck) is evaluated, then ranked by the same search;
// without one, nothing.
std::optional<Plan> evaluate_given(const PlanArgs& a, const ModelInput& in, ClusterDesc& cl) {
  if (a.layout.empty() && a.deck.empty()) return std::nullopt;
  LayoutSpec spec;
  if (!a.layout.empty()) {
    spec = parse_layout_spec(a.layout);
  } else {
    const ModelInput d = a.deck == a.model ? in : load_model_file(a.deck);
    if (!d.is_deck) throw InputError(a.deck + ": parallel: missing (not a mini5d deck)");
    spec.layout = d.deck_layout;
    spec.has_d = spec.has_m = true;
  }
  // Without --nodes, a layout sized for whole nodes chooses the node count.
  if (!a.nodes && spec.has_d) {
    const long long ranks = spec.layout.ranks();
    if (ranks % cl.devices_per_node == 0) cl.nodes = ranks / cl.devices_per_node;
  }
  validate_cluster(cl);
  const Layout l = complete_layout(spec, in.train, cl.devices());
  RuleOptions rules = a.opt.rules;
  rules.skip_redundant = false;
  const std::vector<std::string> why = check_layout(in.model, in.train, cl, l, rules);
  if (!why.empty()) {
    std::string all;
    for (const auto& w : why) all += (all.empty() ? "" : "; ") + w;
    throw InputError((a.layout.empty() ? a.deck : std::string("--layout")) +
                           ": not a valid layout (" + describe(l) + "): " + all);
  }
  return evaluate(in.model, in.train, cl, l, a.opt);
}

// The table, --explain and the given plan's rank, or the JSON record.
void print_results(const PlanArgs& a, const ModelInput& in, const ClusterDesc& cl,
                   const SearchResult& r, const std::optional<Plan>& given) {
  const bool quiet = a.deck_out == "-" || a.slurm_out == "-";
  if (a.json) {
    write_json(std::cout, in.model, in.train, cl, r, given ? &*given : nullptr);
  } else if (!quiet) {
    print_header(std::cout, in.model, in.train, cl);
    if (!r.top.empty()) {
      print_table(std::cout, r, cl);
      std::cout << "\n";
      print_plan_detail(std::cout, r.top.front(), cl);
      if (a.explain && !given) explain(std::cout, in.model, in.train, cl, r, a.opt);
    }
    if (given) {
      std::cout << "\n";
      print_plan_detail(std::cout, *given, cl, "given plan");
      print_given_rank(std::cout, *given, r, cl);
      print_stage_bytes(std::cout, in.model, in.train, cl, given->layout, a.opt);
      if (a.explain) {
        std::cout << "\nThe given plan axis by axis (alternatives re-planned with their best knobs):\n";
        explain_plan(std::cout, in.model, in.train, cl, *given, a.opt);
      }
    }
  }
}

// 3 when the given layout or every plan is too big for the devices (saying so), else 0.
int fit_status(const ClusterDesc& cl, const SearchResult& r, const std::optional<Plan>& given) {
  if (given && !given->fits) {
    std::cerr << "mini5d-plan: the given layout does not fit: it needs "
              << gib(given->memory.total()) << " per device, a device has "
              << gib(cl.device.memory) << "\n";
    return 3;
  }
  if (r.top.empty()) {
    std::cerr << "mini5d-plan: ";
    print_does_not_fit(std::cerr, r, cl);
    return 3;
  }
  return 0;
}

// The deck and script are for the given layout when there is one.
void write_outputs(const PlanArgs& a, const ModelInput& in, const ClusterDesc& cl, const Plan& best) {
  // The deck's virtual nodes and the script's srun place ranks in blocks.
  if ((!a.deck_out.empty() || !a.slurm_out.empty()) && best.layout.mapping == Mapping::cyclic)
    throw InputError("--layout map=cyclic is costed only: --emit-deck and --emit-slurm write block "
                           "placement (drop map=cyclic to emit)");
  if (!a.deck_out.empty()) {
    write_to(a.deck_out, [&](std::ostream& os) { write_deck(os, in, cl, best, a.scale_down); });
    if (a.deck_out != "-") std::cerr << "mini5d-plan: wrote deck " << mini5d::printable_path(a.deck_out) << "\n";
  }
  if (!a.slurm_out.empty()) {
    const std::string deck = a.deck_out.empty() || a.deck_out == "-" ? "plan.yaml" : a.deck_out;
    write_to(a.slurm_out, [&](std::ostream& os) { write_slurm(os, in.model, cl, best, deck); });
    if (a.slurm_out != "-") std::cerr << "mini5d-plan: wrote Slurm script " << mini5d::printable_path(a.slurm_out) << "\n";
  }
}

}  // namespace

int plan_main(int argc, char** argv) {
  PlanArgs a = parse_plan_args(argc, argv);
  try {
    ModelInput in;
    ClusterDesc cl;
    load_inputs(a, in, cl);
    const std::optional<Plan> given = evaluate_given(a, in, cl);
    if (given) a.opt.given = &*given;
    const SearchResult r = search(in.model, in.train, cl, a.opt);
    // On stderr, so the table, the JSON record and "-" outputs stay clean.
    const Plan* shown = given ? &*given : r.top.empty() ? nullptr : &r.top.front();
    for (const auto& note : sanity_notes(in.model, shown)) std::cerr << "mini5d-plan: warning: " << note << "\n";
    print_results(a, in, cl, r, given);
    if (const int status = fit_status(cl, r, given)) return status;
    if (a.tune.plans && !print_tune(std::cout, tune(in, cl, r, a.tune), a.tune)) return 4;
    write_outputs(a, in, cl, given ? *given : r.top.front());
  } catch (const InputError& e) {
    std::cerr << "mini5d-plan: " << mini5d::printable_lines(e.what()) << "\n";
    return 2;
  }
  return 0;
}

}  // namespace mini5d::plan
