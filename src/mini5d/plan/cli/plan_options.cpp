// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/plan/cli/plan_options.hpp"

#include <cerrno>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <vector>

#include "mini5d/rules/deck_choices.hpp"
#include "mini5d/core/printable.hpp"

namespace mini5d::plan {

namespace {

const char* const kUsage =
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
    "                        --breakdown (each run's predicted step and memory, split)\n"
    "  --goodput K=V,...     the goodput rule on given figures, one JSON object: step_s, save_s,\n"
    "                        restart_s, node_mtbf_s, nodes [, write_s, interval_steps]\n";

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

}  // namespace

[[noreturn]] void usage_error(const std::string& msg) {
  std::cerr << "mini5d-plan: " << mini5d::printable_lines(msg) << "\n"
            << "usage: mini5d-plan --model FILE --cluster FILE [options]; "
               "mini5d-plan --help lists the options\n";
  std::exit(1);
}

PlanArgs parse_plan_args(int argc, char** argv) {
  PlanArgs a;
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
        Recompute rc = Recompute::none;
        if (!parse_choice(r, rc)) usage_error(f + ": '" + r + "' (valid: none, selective, full)");
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
  if (a.tune.mini5d.empty()) a.tune.mini5d = default_mini5d_path(argv[0]);
  if (a.model.empty()) a.model = a.deck;
  if (a.model.empty() || a.cluster.empty()) usage_error("--model and --cluster are required");
  if (!a.layout.empty() && !a.deck.empty()) usage_error("--layout and --deck both give a layout; use one");
  if (a.opt.zero_stages.empty() || a.opt.recomputes.empty()) usage_error("empty --zero/--recompute list");
  return a;
}

}  // namespace mini5d::plan
