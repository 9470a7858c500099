// SPDX-License-Identifier: BSD-3-Clause
// mini5d driver: initialises MPI, reads the command line, lets the command settle what
// it must before Kokkos starts, starts Kokkos, runs the command (src/mini5d/commands/)
// and ends as commands/failure.hpp says when it throws (input problems: status 2).
//   mini5d train [DECK] [section.field=value ...]   train (built-in default deck if none)
//   mini5d check DECK [section.field=value ...]     validate a deck and print it resolved
//   mini5d topo [DECK] [section.field=value ...]    the node as hwloc sees it, bindings, placement
//   mini5d ckpt info|verify PATH                    inspect or check a checkpoint
//   mini5d ceilings, mini5d calibrate               the machine's ceilings; a planner cluster file
//   mini5d deck-help                                 every deck field, its range and default
//   mini5d version
#include <mpi.h>

#include <iostream>
#include <optional>
#include <string>

#include "mini5d/comm/mpi_error_line.hpp"
#include "mini5d/commands/calibrate_command.hpp"
#include "mini5d/commands/ceilings_command.hpp"
#include "mini5d/commands/check_command.hpp"
#include "mini5d/commands/ckpt_command.hpp"
#include "mini5d/commands/command_line.hpp"
#include "mini5d/commands/failure.hpp"
#include "mini5d/commands/start_up.hpp"
#include "mini5d/commands/topo_command.hpp"
#include "mini5d/commands/train_command.hpp"
#include "mini5d/commands/version_command.hpp"
#include "mini5d/core/error.hpp"
#include "mini5d/core/printable.hpp"
#include "mini5d/kernels/kokkos_events.hpp"

namespace {

using namespace mini5d::commands;

// What a command runs with: its command line, what it settled before Kokkos started,
// the library's own duplicate of the world communicator, and training's start-up
// watchdog phase (open only for train).
struct Run {
  const CommandLine& line;
  const Prepared& prep;
  MPI_Comm world;
  std::optional<mini5d::comm::watchdog::Scope>& starting;
};

// One row per command: what it settles before Kokkos starts (nullptr: nothing), and the
// command. Each returns the exit status; rank 0 writes to stdout.
struct Command {
  const char* name;
  Prepared (*prepare)(const CommandLine&, MPI_Comm world, int ranks);
  int (*run)(Run&);
};

const Command kCommands[] = {
    {"train", prepare_train, [](Run& r) { return train_command(r.world, r.prep, r.starting, std::cout); }},
    {"check", nullptr, [](Run& r) { return check_command(r.world, r.line, std::cout); }},
    {"topo", nullptr, [](Run& r) { return topo_command(r.world, r.line.deck, r.line.overrides, std::cout); }},
    {"ckpt", nullptr, [](Run& r) { return ckpt_command(r.world, r.line.paths, std::cout); }},
    {"ceilings", nullptr, [](Run& r) { return ceilings_command(r.world, r.line.deck, r.line.overrides, std::cout); }},
    {"calibrate", prepare_calibrate,
     [](Run& r) { return calibrate_command(r.world, r.prep.deck, r.line.calibrate, std::cout); }},
    {"deck-help", nullptr, [](Run& r) { return deck_help_command(r.world, std::cout); }},
    {"version", nullptr, [](Run& r) { return version_command(r.world, std::cout); }},
};

const Command* find_command(const std::string& name) {
  for (const auto& c : kCommands)
    if (name == c.name) return &c;
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  const bool training = argc >= 2 && std::string(argv[1]) == "train";
  init_mpi(argc, argv, training);  // with training's stop handlers around it
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  // A failed MPI call (a peer or its node died) ends the job with one line of ours.
  mini5d::comm::install_mpi_error_line(rank);
  if (asks_for_help(argc, argv)) {
    if (rank == 0) print_help(std::cout);
    MPI_Finalize();
    return 0;
  }
  write_pid_for_tests(rank);
  int status = 0;
  std::optional<mini5d::comm::watchdog::Scope> starting;
  if (training) open_startup_phase(starting, rank);
  MPI_Comm world;  // the library's traffic runs on its own duplicate of the world
  MPI_Comm_dup(MPI_COMM_WORLD, &world);
  {
    mini5d::prof::request_unfenced_counting();  // before Kokkos starts: its tools ask then
    KokkosRun kokkos;
    try {
      const CommandLine line = parse_command_line(argc, argv);
      const Command* c = find_command(line.command);
      Prepared prep;
      if (c && c->prepare) prep = c->prepare(line, world, ranks);
      start_kokkos(kokkos, argc, argv, line.kokkos, prep.placement);
      if (!c)
        throw mini5d::InputError("command line: unknown command \"" + mini5d::printable(line.command) + "\"\n" +
                                 kUsage);
      Run r{line, prep, world, starting};
      status = c->run(r);
    } catch (const std::exception& e) {
      status = report_failure(e, rank, ranks);
    }
  }
  MPI_Comm_free(&world);
  MPI_Finalize();
  return status;
}
