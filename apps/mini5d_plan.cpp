// SPDX-License-Identifier: BSD-3-Clause
// mini5d-plan: which (d, t, p, c, e), micro-batch, ZeRO stage and recomputation for
// this model on this cluster, and why. A dispatch over the planner's modes
// (src/mini5d/plan/cli/): --validate anywhere on the command line checks the planner
// against published runs; --goodput computes the goodput rule on given figures (for the
// failure soak); otherwise it plans (read the two descriptions, search, print
// the table, --explain or --json, and optionally write the deck and the Slurm script).
// Exit status: 0 ok, 1 bad command line, 2 bad input file, 3 nothing fits.
#include <string>

#include "mini5d/plan/cli/goodput_cli.hpp"
#include "mini5d/plan/cli/plan_mode.hpp"
#include "mini5d/plan/cli/validation_cli.hpp"

namespace {

// A flag that selects a mode wherever it stands; the first row found wins.
struct Mode {
  const char* flag;
  int (*run)(int argc, char** argv);  // gets argv as mini5d-plan got it
};

const Mode kModes[] = {
    {"--validate", mini5d::plan::validate_main},
    {"--goodput", mini5d::plan::goodput_main},
};

}  // namespace

int main(int argc, char** argv) {
  for (const Mode& m : kModes)
    for (int i = 1; i < argc; ++i)
      if (std::string(argv[i]) == m.flag) return m.run(argc, argv);
  return mini5d::plan::plan_main(argc, argv);
}
