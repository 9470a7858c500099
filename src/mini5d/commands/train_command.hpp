// SPDX-License-Identifier: BSD-3-Clause
// `mini5d train [DECK] [section.field=value ...] [resume=latest|PATH]`: checks the deck
// and claims the run's outputs before anything is allocated, then trains, printing the
// header, the progress lines and the summary, and writes the JSON report.
#pragma once
#include <mpi.h>

#include <optional>
#include <ostream>

#include "mini5d/comm/watchdog.hpp"
#include "mini5d/commands/command_line.hpp"
#include "mini5d/commands/start_up.hpp"

namespace mini5d::commands {

// Before Kokkos starts, collective over world: the validated deck (every layout rule and
// every feature this build lacks, all at once, agreed over the ranks), the same deck on
// every rank, checkpoint.dir and output.report claimed, and this rank's placement.
Prepared prepare_train(const CommandLine& a, MPI_Comm world, int ranks);

// Collective over world; rank 0 writes to `out`. `starting`: the watchdog's start-up
// phase, closed once the trainer is built. Returns 1 when the run diverged or its report
// could not be written (said once on stderr), else 0.
int train_command(MPI_Comm world, const Prepared& prep, std::optional<comm::watchdog::Scope>& starting,
                  std::ostream& out);

}  // namespace mini5d::commands
