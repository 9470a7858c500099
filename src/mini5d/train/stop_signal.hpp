// SPDX-License-Identifier: BSD-3-Clause
// Graceful stop on SIGTERM and SIGUSR1 (what Slurm sends before the time limit with
// --signal): the handler only raises a flag; the trainer looks at it at each step
// boundary, agrees with every other rank (a rank may get the signal a little later
// than another), saves a checkpoint and exits cleanly.
#pragma once
#include <csignal>

namespace mini5d::train {

// Installs the handlers (idempotent). The previous handlers are not chained. Call it
// twice: before MPI_Init, so a signal that arrives while MPI starts is recorded (MPICH
// installs its own SIGUSR1 handler inside MPI_Init, which passes the signal on to the
// handler it found), and again after, so ours is the one in place for the run. A
// signal before main() runs (while the loader maps the shared libraries) still has
// the default action.
void install_stop_handlers();
// For tests of those windows: MINI5D_TEST_RAISE=<point> raises SIGUSR1 in this process
// when the start-up reaches `point` ("before_mpi_init" or "after_mpi_init", the latter
// while MPICH's handler is still the one installed).
void raise_stop_for_test(const char* point);
// The signal received since install (0 if none).
int stop_signal();
// For tests: forget a received signal.
void clear_stop_signal();

}  // namespace mini5d::train
