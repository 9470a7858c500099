// SPDX-License-Identifier: BSD-3-Clause
// The command line of mini5d-plan's planning mode (every run without --validate): the
// two descriptions, a layout to evaluate, the overrides of the files' values, what to
// print and write, the search's limits and --tune's options. A bad option is one line
// and a pointer to --help on stderr, and exit status 1.
#pragma once
#include <string>

#include "mini5d/plan/search/search.hpp"
#include "mini5d/plan/validation/tune.hpp"

namespace mini5d::plan {

struct PlanArgs {
  std::string model, cluster, deck_out, slurm_out, layout, deck;
  std::string slurm_account, slurm_partition, slurm_mpi;  // site values over the cluster file's
  long long nodes = 0, global_batch = 0;
  std::string precision;
  bool explain = false, json = false, scale_down = false;
  bool overlap_given = false;  // --overlap over the cluster file's software.overlap_efficiency
  SearchOptions opt;
  TuneOptions tune;
};

// Prints the usage and exits 0 on --help; exits 1 (usage_error) on a bad option.
PlanArgs parse_plan_args(int argc, char** argv);

// One line saying what is wrong and a pointer to --help (not the whole usage); exits 1.
[[noreturn]] void usage_error(const std::string& msg);

}  // namespace mini5d::plan
