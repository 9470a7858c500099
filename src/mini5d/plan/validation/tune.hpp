// SPDX-License-Identifier: BSD-3-Clause
// `mini5d-plan --tune N` (docs/planner.md, "a search, not a formula"): the search's top N
// plans become mini5d decks in a folder (full size, and with --scale-down also the
// single-rank version of each); with --run each full deck is trained for a few steps
// through the launcher (`mpiexec -n {ranks}` by default, `srun -n {ranks}` inside an
// allocation), its steady step time read off the run's figure of merit, and the
// fastest measured plan is named beside the planner's own #1, with predicted against
// measured for every plan. The planner needs no MPI: the runs are separate processes.
#pragma once
#include <ostream>
#include <string>
#include <vector>

#include "mini5d/plan/inputs/input_files.hpp"
#include "mini5d/plan/search/search.hpp"

namespace mini5d::plan {

struct TuneOptions {
  int plans = 0;                              // N; 0: no tuning
  std::string dir = "mini5d-tune";            // where decks, logs and reports go
  bool run = false;                           // train each deck for `steps` steps
  bool scale_down = false;                    // also emit each plan's single-rank deck
  long steps = 10;                            // the first is not timed (set-up)
  std::string mini5d;                         // the runtime; "" = next to mini5d-plan
  std::string launcher = "mpiexec -n {ranks}";  // {ranks}: the plan's rank count
};

struct TuneRow {
  int position = 0;  // 1-based, in the planner's order
  Plan plan;
  std::string deck, scaled_deck, log;
  bool ran = false;
  double measured_step = 0;  // seconds, steady state
  std::string problem;       // why it did not run or could not be read
};

// The runtime next to this planner: the same folder (an install's bin/), else the
// build tree's apps/ folder. `self` is argv[0] or /proc/self/exe.
std::string default_mini5d_path(const std::string& self);

// Writes the decks (and runs them with o.run); throws InputError when the folder
// cannot be made or a deck cannot be written.
std::vector<TuneRow> tune(const ModelInput& in, const ClusterDesc& cl, const SearchResult& r,
                          const TuneOptions& o);

// The table: predicted and measured step time and their ratio per plan, then the
// fastest measured plan against the planner's #1. False when runs were asked for and
// none ran (mini5d-plan then exits with status 4).
bool print_tune(std::ostream& os, const std::vector<TuneRow>& rows, const TuneOptions& o);

}  // namespace mini5d::plan
