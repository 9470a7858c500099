// SPDX-License-Identifier: BSD-3-Clause
// mini5d-plan's planning mode: read the two descriptions with the command line's
// overrides, evaluate a given layout (--layout, --deck) if any, search, warn about
// inputs nobody would run, print (table, --explain, --json), tune (--tune) and write the
// deck and the Slurm script (--emit-deck, --emit-slurm) for the best or the given plan.
#pragma once

namespace mini5d::plan {

// argv as mini5d-plan got it; returns the exit status: 0 ok, 1 bad command line,
// 2 bad input file, 3 nothing fits (or the given layout does not), 4 --tune --run ran
// no plan.
int plan_main(int argc, char** argv);

}  // namespace mini5d::plan
