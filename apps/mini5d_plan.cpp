// SPDX-License-Identifier: BSD-3-Clause
// mini5d-plan: which (d, t, p, c, e), micro-batch, ZeRO stage and recomputation for
// this model on this cluster, and why. A thin driver over mini5d::plan: parse the
// command line, read the two descriptions, search, print (table, --explain, --json)
// and optionally write the deck and the Slurm script for the best plan.
// Exit status: 0 ok, 1 bad command line, 2 bad input file, 3 nothing fits.
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "mini5d/plan/emit_deck.hpp"
#include "mini5d/plan/emit_slurm.hpp"
#include "mini5d/plan/explain.hpp"
#include "mini5d/plan/input_files.hpp"
#include "mini5d/plan/json.hpp"
#include "mini5d/plan/report.hpp"
#include "mini5d/plan/search.hpp"

namespace plan = mini5d::plan;

namespace {

const char* kUsage =
    "usage: mini5d-plan --model FILE --cluster FILE [options]\n"
    "  --model FILE          model description or mini5d deck (inputs/models/*.yaml, inputs/*.yaml)\n"
    "  --cluster FILE        cluster description (inputs/clusters/*.yaml)\n"
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
    "  --allow-cross-node-tp let tensor groups span nodes\n"
    "  --moe-imbalance X     busiest expert's load over the mean (default 1.1 for MoE)\n"
    "  --overlap X           fraction of overlappable communication hidden (default 0.9)\n";

struct Args {
  std::string model, cluster, deck_out, slurm_out;
  std::string slurm_account, slurm_partition, slurm_mpi;  // site values over the cluster file's
  long long nodes = 0, global_batch = 0;
  std::string precision;
  bool explain = false, json = false, scale_down = false;
  plan::SearchOptions opt;
};

[[noreturn]] void usage_error(const std::string& msg) {
  std::cerr << "mini5d-plan: " << msg << "\n" << kUsage;
  std::exit(1);
}

double number_arg(const std::string& flag, const std::string& v, double lo, double hi) {
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end || !(x >= lo && x <= hi))
    usage_error(flag + ": '" + v + "' is not a number in [" + std::to_string(lo) + ", " +
                std::to_string(hi) + "]");
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
    else if (f == "--nodes") a.nodes = static_cast<long long>(number_arg(f, val(), 1, 1e7));
    else if (f == "--global-batch") a.global_batch = static_cast<long long>(number_arg(f, val(), 1, 1e12));
    else if (f == "--precision") a.precision = val();
    else if (f == "--top") a.opt.top = static_cast<std::size_t>(number_arg(f, val(), 1, 1e6));
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
      for (const auto& z : split(val())) a.opt.zero_stages.push_back(int(number_arg(f, z, 0, 3)));
    } else if (f == "--recompute") {
      a.opt.recomputes.clear();
      for (const auto& r : split(val())) {
        plan::Recompute rc;
        if (!plan::parse_recompute(r, rc)) usage_error(f + ": '" + r + "' (valid: none, selective, full)");
        a.opt.recomputes.push_back(rc);
      }
    } else if (f == "--max-micro-batch") a.opt.max_micro_batch = int(number_arg(f, val(), 1, 1e6));
    else if (f == "--max-virtual") a.opt.max_virtual_stages = int(number_arg(f, val(), 1, 1024));
    else if (f == "--gpipe") a.opt.allow_gpipe = true;
    else if (f == "--allow-cross-node-tp") a.opt.rules.allow_cross_node_tp = true;
    else if (f == "--moe-imbalance") a.opt.time.moe_imbalance = number_arg(f, val(), 1, 100);
    else if (f == "--overlap") a.opt.time.overlap_efficiency = number_arg(f, val(), 0, 1);
    else usage_error("unknown option '" + f + "'");
  }
  if (a.model.empty() || a.cluster.empty()) usage_error("--model and --cluster are required");
  if (a.opt.zero_stages.empty() || a.opt.recomputes.empty()) usage_error("empty --zero/--recompute list");
  return a;
}

// Writes through `write` to FILE or stdout ('-').
template <class W>
void write_to(const std::string& path, W&& write) {
  if (path == "-") return write(std::cout);
  std::ofstream out(path);
  if (!out) throw plan::InputError(path + ": cannot write file");
  write(out);
}

}  // namespace

int main(int argc, char** argv) {
  Args a = parse(argc, argv);
  try {
    plan::ModelInput in = plan::load_model_file(a.model);
    plan::ClusterDesc cl = plan::load_cluster_file(a.cluster);
    if (a.nodes) cl.nodes = a.nodes;
    if (!a.slurm_account.empty()) cl.slurm_account = a.slurm_account;
    if (!a.slurm_partition.empty()) cl.slurm_partition = a.slurm_partition;
    if (!a.slurm_mpi.empty()) cl.slurm_mpi = a.slurm_mpi;
    if (a.global_batch) in.train.global_batch = a.global_batch;
    if (!a.precision.empty() && !plan::parse_precision(a.precision, in.train.precision))
      usage_error("--precision: '" + a.precision + "' (valid: fp32, bf16, fp64)");
    plan::validate_cluster(cl);
    plan::validate_model(in.model, in.train);
    if (cl.device.sustained[plan::precision_index(in.train.precision)] <= 0)
      throw plan::InputError(cl.source + ": device.peak_tflops." +
                             plan::to_string(in.train.precision) + ": missing (the device has no " +
                             plan::to_string(in.train.precision) +
                             " rate; choose another --precision)");
    if (a.opt.time.moe_imbalance < 0) a.opt.time.moe_imbalance = in.model.moe() ? 1.1 : 1.0;
    a.opt.memory.moe_imbalance = a.opt.time.moe_imbalance;

    const plan::SearchResult r = plan::search(in.model, in.train, cl, a.opt);
    const bool quiet = a.deck_out == "-" || a.slurm_out == "-";
    if (a.json) {
      plan::write_json(std::cout, in.model, in.train, cl, r);
    } else if (!quiet) {
      plan::print_header(std::cout, in.model, in.train, cl);
      if (!r.top.empty()) {
        plan::print_table(std::cout, r, cl);
        std::cout << "\n";
        plan::print_plan_detail(std::cout, r.top.front(), cl);
        if (a.explain) plan::explain(std::cout, in.model, in.train, cl, r, a.opt);
      }
    }
    if (r.top.empty()) {
      plan::print_does_not_fit(std::cerr, r, cl);
      return 3;
    }
    const plan::Plan& best = r.top.front();
    if (!a.deck_out.empty()) {
      write_to(a.deck_out, [&](std::ostream& os) { plan::write_deck(os, in, cl, best, a.scale_down); });
      if (a.deck_out != "-") std::cerr << "mini5d-plan: wrote deck " << a.deck_out << "\n";
    }
    if (!a.slurm_out.empty()) {
      const std::string deck = a.deck_out.empty() || a.deck_out == "-" ? "plan.yaml" : a.deck_out;
      write_to(a.slurm_out, [&](std::ostream& os) { plan::write_slurm(os, in.model, cl, best, deck); });
      if (a.slurm_out != "-") std::cerr << "mini5d-plan: wrote Slurm script " << a.slurm_out << "\n";
    }
  } catch (const plan::InputError& e) {
    std::cerr << "mini5d-plan: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
