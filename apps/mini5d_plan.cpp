// SPDX-License-Identifier: BSD-3-Clause
// mini5d-plan: which (d, t, p, c, e), micro-batch, ZeRO stage and recomputation for
// this model on this cluster, and why. A thin driver over mini5d::plan: parse the
// command line, read the two descriptions, search, print (table, --explain, --json)
// and optionally write the deck and the Slurm script for the best plan.
// Exit status: 0 ok, 1 bad command line, 2 bad input file, 3 nothing fits.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "mini5d/core/deck_choices.hpp"
#include "mini5d/core/printable.hpp"
#include "mini5d/plan/axis_traffic.hpp"
#include "mini5d/core/regular_file.hpp"
#include "mini5d/plan/emit_deck.hpp"
#include "mini5d/plan/emit_slurm.hpp"
#include "mini5d/plan/explain.hpp"
#include "mini5d/plan/format.hpp"
#include "mini5d/plan/given_layout.hpp"
#include "mini5d/plan/input_files.hpp"
#include "mini5d/plan/json.hpp"
#include "mini5d/plan/report.hpp"
#include "mini5d/plan/sanity_notes.hpp"
#include "mini5d/plan/search.hpp"
#include "mini5d/plan/tune.hpp"
#include "mini5d/plan/validation_cli.hpp"

namespace plan = mini5d::plan;

namespace {

const char* kUsage =
    "usage: mini5d-plan --model FILE --cluster FILE [options]\n"
    "  --model FILE          model description or mini5d deck (inputs/models/*.yaml, inputs/*.yaml)\n"
    "  --cluster FILE        cluster description (inputs/clusters/*.yaml; shipped: " MINI5D_SHIPPED_CLUSTERS ")\n"
    "  --layout SPEC         evaluate this layout and rank it, e.g. t=8,p=4,mb=1,zero=1,\n"
    "                        recompute=selective,v=2 (keys d t p c e mb m zero recompute v sp\n"
    "                        schedule stages map, e.g. stages=3+5 or balanced, map=cyclic for\n"
    "                        ranks dealt round-robin to nodes; omitted: runtime defaults, block\n"
    "                        placement, d and m from what is left)\n"
    "  --deck FILE           evaluate and rank the layout of a mini5d deck (the deck is\n"
    "                        also the model unless --model is given)\n"
    "  --nodes N             use N nodes (default: the cluster file's)\n"
    "  --global-batch N      sequences per optimizer step (default: the model file's/deck's)\n"
    "  --precision P         fp32 | bf16 | fp64 (default: the model file's, else fp32)\n"
    "  --top N               plans in the table (default 10)\n"
    "  --explain             explain the best plan axis by axis\n"
    "  --json                JSON record instead of the table\n"
    "  --emit-deck FILE      write a mini5d deck for the best plan ('-' = stdout)\n"
    "  --scale-down          with --emit-deck: a single-rank, seconds-long version\n"
    "  --emit-slurm FILE     write an sbatch script for the best plan ('-' = stdout)\n"
    "  --slurm-account A     sbatch --account (default: the cluster file's slurm.account)\n"
    "  --slurm-partition P   sbatch --partition (default: the cluster file's slurm.partition)\n"
    "  --slurm-mpi M         srun --mpi: pmi2 | pmix | none (default: the cluster file's slurm.mpi)\n"
    "  --zero LIST           ZeRO stages to consider, e.g. 0,1 (default 0,1,2,3)\n"
    "  --recompute LIST      of none,selective,full (default all)\n"
    "  --max-micro-batch N   largest micro-batch considered (default 16)\n"
    "  --max-virtual N       largest interleaving factor considered (default 8)\n"
    "  --gpipe               also consider the GPipe schedule\n"
    "  --no-sp               do not consider sequence parallelism\n"
    "  --max-c N             largest context-parallel degree considered\n"
    "  --allow-cross-node-tp let tensor groups span nodes\n"
    "  --moe-imbalance X     busiest expert's load over the mean (default 1.1 for MoE)\n"
    "  --overlap X           fraction of overlappable communication hidden (default: the cluster\n"
    "                        file's software.overlap_efficiency, else 0.9)\n"
    "  --tune N              write the top N plans as decks (with --scale-down also their\n"
    "                        single-rank versions); with --run train each for a few steps\n"
    "                        and report predicted against measured, fastest measured first\n"
    "  --tune-dir DIR        where the tuning decks, logs and reports go (default mini5d-tune)\n"
    "  --run                 with --tune: run the decks (needs the plans' ranks)\n"
    "  --tune-steps N        with --run: steps per deck, the first untimed (default 10)\n"
    "  --launcher CMD        with --run: how to start N ranks (default 'mpiexec -n {ranks}')\n"
    "  --mini5d PATH         with --run: the runtime (default: next to mini5d-plan)\n"
    "  --validate FILE       published runs (inputs/validation/*.yaml) against the planner;\n"
    "                        with --rows fit|test|all, --json, --cluster FILE (default: the file's),\n"
    "                        --rank (each published layout's rank in the free search),\n"
    "                        --breakdown (each run's predicted step and memory, split)\n";

struct Args {
  std::string model, cluster, deck_out, slurm_out, layout, deck;
  std::string slurm_account, slurm_partition, slurm_mpi;  // site values over the cluster file's
  long long nodes = 0, global_batch = 0;
  std::string precision;
  bool explain = false, json = false, scale_down = false;
  bool overlap_given = false;  // --overlap over the cluster file's software.overlap_efficiency
  plan::SearchOptions opt;
  plan::TuneOptions tune;
};

// One line saying what is wrong and a pointer to --help (not the whole usage).
[[noreturn]] void usage_error(const std::string& msg) {
  std::cerr << "mini5d-plan: " << mini5d::printable_lines(msg) << "\n"
            << "usage: mini5d-plan --model FILE --cluster FILE [options]; "
               "mini5d-plan --help lists the options\n";
  std::exit(1);
}

std::string num_text(double v) {
  std::ostringstream o;
  o << v;
  return o.str();
}

double number_arg(const std::string& flag, const std::string& v, double lo, double hi) {
  char* end = nullptr;
  errno = 0;
  const double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end || errno == ERANGE || !(x >= lo && x <= hi))
    usage_error(flag + ": '" + v + "' is not valid (valid: a number in [" + num_text(lo) + ", " +
                num_text(hi) + "])");
  return x;
}

// Counts are integers: "2.5" nodes is refused, not truncated to 2.
long long integer_arg(const std::string& flag, const std::string& v, long long lo, long long hi) {
  char* end = nullptr;
  errno = 0;
  const long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end || errno == ERANGE || x < lo || x > hi)
    usage_error(flag + ": '" + v + "' is not valid (valid: an integer in [" + std::to_string(lo) +
                ", " + std::to_string(hi) + "])");
  return x;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) out.push_back(item);
  return out;
}

Args parse(int argc, char** argv) {
  Args a;
  a.opt.time.moe_imbalance = -1;  // resolved once the model is known
  for (int i = 1; i < argc; ++i) {
    const std::string f = argv[i];
    auto val = [&]() -> std::string {
      if (i + 1 >= argc) usage_error(f + " needs a value");
      return argv[++i];
    };
    if (f == "--help" || f == "-h") std::cout << kUsage, std::exit(0);
    else if (f == "--model") a.model = val();
    else if (f == "--cluster") a.cluster = val();
    else if (f == "--layout") a.layout = val();
    else if (f == "--deck") a.deck = val();
    else if (f == "--nodes") a.nodes = integer_arg(f, val(), 1, 10000000);
    else if (f == "--global-batch") a.global_batch = integer_arg(f, val(), 1, 2147483647LL);
    else if (f == "--precision") a.precision = val();
    else if (f == "--top") a.opt.top = static_cast<std::size_t>(integer_arg(f, val(), 1, 1000000));
    else if (f == "--explain") a.explain = true;
    else if (f == "--json") a.json = true;
    else if (f == "--emit-deck") a.deck_out = val();
    else if (f == "--scale-down") a.scale_down = true;
    else if (f == "--emit-slurm") a.slurm_out = val();
    else if (f == "--slurm-account") a.slurm_account = val();
    else if (f == "--slurm-partition") a.slurm_partition = val();
    else if (f == "--slurm-mpi") a.slurm_mpi = val();
    else if (f == "--zero") {
      a.opt.zero_stages.clear();
      for (const auto& z : split(val())) a.opt.zero_stages.push_back(int(integer_arg(f, z, 0, 3)));
    } else if (f == "--recompute") {
      a.opt.recomputes.clear();
      for (const auto& r : split(val())) {
        mini5d::Recompute rc = mini5d::Recompute::none;
        if (!mini5d::parse_choice(r, rc)) usage_error(f + ": '" + r + "' (valid: none, selective, full)");
        a.opt.recomputes.push_back(rc);
      }
    } else if (f == "--max-micro-batch") a.opt.max_micro_batch = int(integer_arg(f, val(), 1, 1000000));
    else if (f == "--max-virtual") a.opt.max_virtual_stages = int(integer_arg(f, val(), 1, 1024));
    else if (f == "--gpipe") a.opt.allow_gpipe = true;
    else if (f == "--no-sp") a.opt.allow_sp = false;
    else if (f == "--max-c") a.opt.max_c = integer_arg(f, val(), 1, 1LL << 40);
    else if (f == "--allow-cross-node-tp") a.opt.rules.allow_cross_node_tp = true;
    else if (f == "--moe-imbalance") a.opt.time.moe_imbalance = number_arg(f, val(), 1, 100);
    else if (f == "--overlap") a.opt.time.overlap_efficiency = number_arg(f, val(), 0, 1), a.overlap_given = true;
    else if (f == "--tune") a.tune.plans = int(integer_arg(f, val(), 1, 1000));
    else if (f == "--tune-dir") a.tune.dir = val();
    else if (f == "--run") a.tune.run = true;
    else if (f == "--tune-steps") a.tune.steps = integer_arg(f, val(), 2, 1000000);
    else if (f == "--launcher") a.tune.launcher = val();
    else if (f == "--mini5d") a.tune.mini5d = val();
    else usage_error("unknown option '" + f + "'");
  }
  a.tune.scale_down = a.scale_down;
  if (a.tune.run && !a.tune.plans) usage_error("--run needs --tune N");
  if (a.tune.plans && a.json) usage_error("--tune prints a table, not JSON; drop --json");
  if (a.tune.mini5d.empty()) a.tune.mini5d = plan::default_mini5d_path(argv[0]);
  if (a.model.empty()) a.model = a.deck;
  if (a.model.empty() || a.cluster.empty()) usage_error("--model and --cluster are required");
  if (!a.layout.empty() && !a.deck.empty()) usage_error("--layout and --deck both give a layout; use one");
  if (a.opt.zero_stages.empty() || a.opt.recomputes.empty()) usage_error("empty --zero/--recompute list");
  return a;
}

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
    throw plan::InputError(path + ": cannot write file (" + why + ")");
}

}  // namespace

// The given layout's memory per rank and payload bytes per step by axis, per pipeline
// stage, in the runtime's accounting (plan/axis_traffic.hpp): what `mini5d train` prints
// beside its measurements for the same deck. Every block is MoE when the model has
// experts (the planner's model).
static void print_stage_bytes(std::ostream& os, const plan::ModelDesc& m, const plan::TrainDesc& tr,
                       const plan::ClusterDesc& cl, const plan::Layout& l, const plan::SearchOptions& o) {
  os << "per rank, by pipeline stage: training state and activations (bytes), and payload bytes per step by axis\n"
     << "  stage   weights     grads optimizer activations          t          c          e          p          d  d (experts)\n";
  for (int stage = 0; stage < l.p; ++stage) {
    const plan::MemoryBreakdown mem = plan::stage_memory(m, tr, cl, l, stage, o.memory);
    const plan::ShardParams sp = plan::stage_params(m, l, stage);
    const plan::AxisTraffic a = plan::step_traffic(m, l, stage, 1, sp.dense, sp.expert,
                                                   plan::activation_elem_bytes(tr.precision));
    char line[320];
    std::snprintf(line, sizeof line, "  %5d %9.0f %9.0f %9.0f %11.0f %10.0f %10.0f %10.0f %10.0f %10.0f %10.0f\n", stage,
                  mem.weights, mem.grads, mem.optimizer, mem.activations, a.tp(), a.cp_activations,
                  a.ep_activations, a.pp(), a.dp(), a.dp_expert());
    os << line;
  }
}

namespace {

// The model and cluster descriptions with the command line's overrides, checked
// against each other.
void load_inputs(Args& a, plan::ModelInput& in, plan::ClusterDesc& cl) {
  in = plan::load_model_file(a.model);
  cl = plan::load_cluster_file(a.cluster);
  if (a.nodes) cl.nodes = a.nodes;
  if (!a.slurm_account.empty()) cl.slurm_account = a.slurm_account;
  if (!a.slurm_partition.empty()) cl.slurm_partition = a.slurm_partition;
  if (!a.slurm_mpi.empty()) cl.slurm_mpi = a.slurm_mpi;
  if (a.global_batch) in.train.global_batch = a.global_batch;
  if (!a.overlap_given && cl.software.overlap_efficiency >= 0)
    a.opt.time.overlap_efficiency = cl.software.overlap_efficiency;
  if (!a.precision.empty() && !mini5d::parse_choice(a.precision, in.train.precision))
    usage_error("--precision: '" + a.precision + "' (valid: fp32, bf16, fp64)");
  plan::validate_cluster(cl);
  plan::validate_model(in.model, in.train);
  if (cl.device.sustained[plan::precision_index(in.train.precision)] <= 0)
    throw plan::InputError(cl.source + ": device.peak_tflops." +
                           to_string(in.train.precision) + ": missing (the device has no " +
                           to_string(in.train.precision) +
                           " rate; choose another --precision)");
  if (a.opt.time.moe_imbalance < 0) a.opt.time.moe_imbalance = in.model.moe() ? 1.1 : 1.0;
  a.opt.memory.moe_imbalance = a.opt.time.moe_imbalance;
}

// A given layout (--layout, --deck) is evaluated, then ranked by the same search;
// without one, nothing.
std::optional<plan::Plan> evaluate_given(const Args& a, const plan::ModelInput& in, plan::ClusterDesc& cl) {
  if (a.layout.empty() && a.deck.empty()) return std::nullopt;
  plan::LayoutSpec spec;
  if (!a.layout.empty()) {
    spec = plan::parse_layout_spec(a.layout);
  } else {
    const plan::ModelInput d = a.deck == a.model ? in : plan::load_model_file(a.deck);
    if (!d.is_deck) throw plan::InputError(a.deck + ": parallel: missing (not a mini5d deck)");
    spec.layout = d.deck_layout;
    spec.has_d = spec.has_m = true;
  }
  // Without --nodes, a layout sized for whole nodes chooses the node count.
  if (!a.nodes && spec.has_d) {
    const long long ranks = spec.layout.ranks();
    if (ranks % cl.devices_per_node == 0) cl.nodes = ranks / cl.devices_per_node;
  }
  plan::validate_cluster(cl);
  const plan::Layout l = plan::complete_layout(spec, in.train, cl.devices());
  plan::RuleOptions rules = a.opt.rules;
  rules.skip_redundant = false;
  const std::vector<std::string> why = plan::check_layout(in.model, in.train, cl, l, rules);
  if (!why.empty()) {
    std::string all;
    for (const auto& w : why) all += (all.empty() ? "" : "; ") + w;
    throw plan::InputError((a.layout.empty() ? a.deck : std::string("--layout")) +
                           ": not a valid layout (" + plan::describe(l) + "): " + all);
  }
  return plan::evaluate(in.model, in.train, cl, l, a.opt);
}

// The table, --explain and the given plan's rank, or the JSON record.
void print_results(const Args& a, const plan::ModelInput& in, const plan::ClusterDesc& cl,
                   const plan::SearchResult& r, const std::optional<plan::Plan>& given) {
  const bool quiet = a.deck_out == "-" || a.slurm_out == "-";
  if (a.json) {
    plan::write_json(std::cout, in.model, in.train, cl, r, given ? &*given : nullptr);
  } else if (!quiet) {
    plan::print_header(std::cout, in.model, in.train, cl);
    if (!r.top.empty()) {
      plan::print_table(std::cout, r, cl);
      std::cout << "\n";
      plan::print_plan_detail(std::cout, r.top.front(), cl);
      if (a.explain && !given) plan::explain(std::cout, in.model, in.train, cl, r, a.opt);
    }
    if (given) {
      std::cout << "\n";
      plan::print_plan_detail(std::cout, *given, cl, "given plan");
      plan::print_given_rank(std::cout, *given, r, cl);
      print_stage_bytes(std::cout, in.model, in.train, cl, given->layout, a.opt);
      if (a.explain) {
        std::cout << "\nThe given plan axis by axis (alternatives re-planned with their best knobs):\n";
        plan::explain_plan(std::cout, in.model, in.train, cl, *given, a.opt);
      }
    }
  }
}

// 3 when the given layout or every plan is too big for the devices (saying so), else 0.
int fit_status(const plan::ClusterDesc& cl, const plan::SearchResult& r, const std::optional<plan::Plan>& given) {
  if (given && !given->fits) {
    std::cerr << "mini5d-plan: the given layout does not fit: it needs "
              << plan::gib(given->memory.total()) << " per device, a device has "
              << plan::gib(cl.device.memory) << "\n";
    return 3;
  }
  if (r.top.empty()) {
    std::cerr << "mini5d-plan: ";
    plan::print_does_not_fit(std::cerr, r, cl);
    return 3;
  }
  return 0;
}

// The deck and script are for the given layout when there is one.
void write_outputs(const Args& a, const plan::ModelInput& in, const plan::ClusterDesc& cl, const plan::Plan& best) {
  // The deck's virtual nodes and the script's srun place ranks in blocks.
  if ((!a.deck_out.empty() || !a.slurm_out.empty()) && best.layout.mapping == plan::Mapping::cyclic)
    throw plan::InputError("--layout map=cyclic is costed only: --emit-deck and --emit-slurm write block "
                           "placement (drop map=cyclic to emit)");
  if (!a.deck_out.empty()) {
    write_to(a.deck_out, [&](std::ostream& os) { plan::write_deck(os, in, cl, best, a.scale_down); });
    if (a.deck_out != "-") std::cerr << "mini5d-plan: wrote deck " << mini5d::printable_path(a.deck_out) << "\n";
  }
  if (!a.slurm_out.empty()) {
    const std::string deck = a.deck_out.empty() || a.deck_out == "-" ? "plan.yaml" : a.deck_out;
    write_to(a.slurm_out, [&](std::ostream& os) { plan::write_slurm(os, in.model, cl, best, deck); });
    if (a.slurm_out != "-") std::cerr << "mini5d-plan: wrote Slurm script " << mini5d::printable_path(a.slurm_out) << "\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--validate") return plan::validate_main(argc, argv);
  Args a = parse(argc, argv);
  try {
    plan::ModelInput in;
    plan::ClusterDesc cl;
    load_inputs(a, in, cl);
    const std::optional<plan::Plan> given = evaluate_given(a, in, cl);
    if (given) a.opt.given = &*given;
    const plan::SearchResult r = plan::search(in.model, in.train, cl, a.opt);
    // On stderr, so the table, the JSON record and "-" outputs stay clean.
    const plan::Plan* shown = given ? &*given : r.top.empty() ? nullptr : &r.top.front();
    for (const auto& note : plan::sanity_notes(in.model, shown)) std::cerr << "mini5d-plan: warning: " << note << "\n";
    print_results(a, in, cl, r, given);
    if (const int status = fit_status(cl, r, given)) return status;
    if (a.tune.plans && !plan::print_tune(std::cout, plan::tune(in, cl, r, a.tune), a.tune)) return 4;
    write_outputs(a, in, cl, given ? *given : r.top.front());
  } catch (const plan::InputError& e) {
    std::cerr << "mini5d-plan: " << mini5d::printable_lines(e.what()) << "\n";
    return 2;
  }
  return 0;
}
