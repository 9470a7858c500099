// SPDX-License-Identifier: BSD-3-Clause
// What the driver does for every command before the command runs: what the command
// settles before Kokkos starts (the deck and this rank's placement: binding first, so
// thread pools are sized to the rank's cores and the GPU is chosen when Kokkos starts),
// then Kokkos itself, and training's start-up watchdog phase.
#pragma once
#include <Kokkos_Core.hpp>
#include <optional>
#include <string>
#include <vector>

#include "mini5d/comm/watchdog.hpp"
#include "mini5d/commands/command_line.hpp"
#include "mini5d/core/deck.hpp"
#include "mini5d/topology/startup.hpp"
#include "mini5d/train/startup/output_paths.hpp"

namespace mini5d::commands {

// MPI_Init, for training with the stop handlers installed before it and again after it
// (train/stop_signal.hpp says why): a SIGUSR1 or SIGTERM during start-up or a long
// resume (Slurm's --signal=USR1@N on a requeued job) is kept and honoured at the first
// step boundary. The other commands keep the default (they end on SIGTERM).
// Training asks for MPI_THREAD_MULTIPLE: an asynchronous checkpoint's writer thread
// runs MPI-IO collectives while the training thread communicates (whether it was
// granted is asked with MPI_Query_thread where it matters: train/async_checkpoint.cpp).
void init_mpi(int& argc, char**& argv, bool training);

// For tests that kill one rank (not the launcher): MINI5D_PID_DIR=<dir> makes each rank
// write its PID to <dir>/rank-<r>.pid.
void write_pid_for_tests(int rank);

// Settled before Kokkos starts; default (empty) for commands that settle nothing.
struct Prepared {
  Deck deck;
  topology::Placement placement;
  train::OutputClaim claim;  // checkpoint.dir and output.report, held for the run (train)
};

// calibrate's: the deck, agreed over the ranks, and the placement a data-parallel run
// over all ranks would get (the deck's ranks_per_node and binding fields apply), so it
// measures what training gets. Collective over world. (train's: prepare_train.)
Prepared prepare_calibrate(const CommandLine& a, MPI_Comm world, int ranks);

// Kokkos for as long as the command runs, and the arguments it was started with, which
// outlive it (members end in reverse order).
struct KokkosRun {
  std::vector<std::string> args;
  std::optional<Kokkos::ScopeGuard> guard;
};

// Starts Kokkos into `kokkos`. Kokkos sees the command line (`argv`) plus what placement
// chose: the GPU and the host threads. Kokkos throws on a malformed option of its own
// (--kokkos-threads=-1, one of `given`): that is bad input (InputError naming the
// command line), not a fatal error of the run.
void start_kokkos(KokkosRun& kokkos, int argc, char** argv, const std::vector<std::string>& given,
                  const topology::Placement& pl);

// Training's start-up is a watchdog phase from its first collective on: a rank that
// stops before the first step must not leave the others waiting (comm/watchdog.hpp).
// The deck's limit replaces the default once the deck is read (prepare_train).
void open_startup_phase(std::optional<comm::watchdog::Scope>& starting, int rank);

}  // namespace mini5d::commands
