// SPDX-License-Identifier: BSD-3-Clause
// Graceful stop on SIGTERM and SIGUSR1 (what Slurm sends before the time limit with
// --signal): the handler only raises a flag; the trainer looks at it at each step
// boundary, agrees with every other rank (a rank may get the signal a little later
// than another), saves a checkpoint and exits cleanly.
#pragma once
#include <csignal>

namespace mini5d::train {

// Installs the handlers (idempotent). The previous handlers are not chained.
void install_stop_handlers();
// The signal received since install (0 if none).
int stop_signal();
// For tests: forget a received signal.
void clear_stop_signal();

}  // namespace mini5d::train
