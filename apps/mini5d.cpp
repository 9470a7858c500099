// SPDX-License-Identifier: BSD-3-Clause
// mini5d driver: initialises MPI and Kokkos, parses the command, runs, reports.
//   mini5d train [DECK] [section.field=value ...]   train (built-in default deck if none)
//   mini5d check DECK [section.field=value ...]     validate a deck and print it resolved
//   mini5d topo [DECK] [section.field=value ...]    the node as hwloc sees it, bindings, placement
//   mini5d ckpt info|verify PATH                    inspect or check a checkpoint
//   mini5d deck-help                                 every deck field, its range and default
//   mini5d version
// Input problems print once (rank 0), one line each, and exit with status 2. A run
// that stops because it diverged, or whose report cannot be written, says why once and
// exits with status 1, as does a failure every rank found together (a checkpoint save
// on a full disk). Any other failure prints one whole line per failing rank
// ("mini5d: rank N: fatal: ...") and ends the job. For tests, MINI5D_FAIL=fatal makes
// every rank fail that way right after start-up.
#include <mpi.h>

#include <unistd.h>

#include <Kokkos_Core.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <iostream>
#include <string>
#include <vector>

#include "mini5d/checkpoint/commit.hpp"
#include "mini5d/comm/agreement.hpp"
#include "mini5d/comm/watchdog.hpp"
#include "mini5d/comm/mpi_error_line.hpp"
#include "mini5d/comm/mpi_gtl.hpp"
#include "mini5d/commands/calibrate_command.hpp"
#include "mini5d/commands/ceilings_command.hpp"
#include "mini5d/commands/ckpt_command.hpp"
#include "mini5d/commands/topo_command.hpp"
#include "mini5d/core/deck.hpp"
#include "mini5d/core/diag.hpp"
#include "mini5d/core/error.hpp"
#include "mini5d/core/printable.hpp"
#include "mini5d/grid/layout_rules.hpp"
#include "mini5d/kernels/kokkos_events.hpp"
#include "mini5d/measure/platform.hpp"
#include "mini5d/report/report.hpp"
#include "mini5d/topology/startup.hpp"
#include "mini5d/train/startup/output_paths.hpp"
#include "mini5d/train/startup/same_deck.hpp"
#include "mini5d/train/stop_signal.hpp"
#include "mini5d/train/trainer.hpp"

namespace {

constexpr const char* kUsage =
    "usage: mini5d train [DECK] [section.field=value ...] [resume=latest|PATH]\n"
    "       mini5d check DECK [section.field=value ...]\n"
    "       mini5d topo [DECK] [section.field=value ...]\n"
    "       mini5d ckpt info|verify PATH   (PATH: checkpoint directory or file)\n"
    "       mini5d ceilings [refresh | CLUSTER.yaml]   (sgemm and stream ceilings for the kernel table, cached)\n"
    "       mini5d calibrate [DECK] [--out FILE] [--base CLUSTER.yaml] [--quick]\n"
    "                        (measure this allocation's GEMMs, bandwidth and links into a planner cluster file)\n"
    "       mini5d deck-help | version\n";

struct Args {
  std::string command, deck;
  std::vector<std::string> overrides;
  std::vector<std::string> kokkos;  // --kokkos-... options: Kokkos' own, read by Kokkos from argv
  mini5d::commands::CalibrateOptions calibrate;  // calibrate's --out, --base, --quick
};

Args parse_args(int argc, char** argv) {
  Args a;
  if (argc < 2) throw mini5d::InputError(std::string("no command given\n") + kUsage);
  a.command = argv[1];
  for (int i = 2; i < argc; ++i) {
    std::string s = argv[i];
    // "resume=latest" or "resume=PATH": shorthand for checkpoint.resume=...
    if (s.rfind("resume=", 0) == 0) s = "checkpoint." + s;
    if (a.command == "calibrate" && s.rfind("--", 0) == 0) {
      if (s == "--quick") {
        a.calibrate.quick = true;
        continue;
      }
      if ((s != "--out" && s != "--base") || i + 1 >= argc)
        throw mini5d::InputError("command line: calibrate: \"" + mini5d::printable(s) +
                                 "\" is not an option (valid: --out FILE, --base CLUSTER.yaml, --quick)");
      (s == "--out" ? a.calibrate.out : a.calibrate.base) = argv[++i];
      continue;
    }
    // Kokkos reads its own options from argv when it starts (--help advertises them):
    // neither an override nor a deck. Kokkos judges their values (kokkos_refused).
    if (s.rfind("--kokkos-", 0) == 0)
      a.kokkos.push_back(s);
    else if (s.find('=') != std::string::npos)
      a.overrides.push_back(s);
    else if (a.deck.empty())
      a.deck = s;
    else
      throw mini5d::InputError("command line: unexpected argument \"" + mini5d::printable(s) + "\" (one deck at most)\n" + kUsage);
  }
  return a;
}

mini5d::Deck resolve_deck(const Args& a) {
  if (a.deck.empty()) return mini5d::parse_deck("", "built-in default deck", a.overrides);
  return mini5d::load_deck(a.deck, a.overrides);
}

// What `train` settles before Kokkos starts: the validated deck, and the placement
// (binding first, so thread pools are sized to the rank's cores and the GPU is chosen
// at Kokkos initialisation).
struct Prepared {
  mini5d::Deck deck;
  mini5d::topology::Placement placement;
  mini5d::train::OutputClaim claim;  // checkpoint.dir and output.report, held for the run
};

Prepared prepare_train(const Args& a, MPI_Comm world, int ranks) {
  using namespace mini5d;
  Prepared p;
  // Every layout rule and every feature this build lacks, all reported at once and
  // before anything is allocated; agreed over the ranks, since a deck file missing on
  // one node fails there only.
  comm::agreed(world, [&] {
    p.deck = resolve_deck(a);
    (void)checkpoint::detail::fail_points_from_env();  // a test's misspelt fail point, before training
    // The deck's limit from here on (main started the watchdog with the default), and
    // the folder its heartbeats go to, to name a rank that stops answering.
    int rank = 0;
    MPI_Comm_rank(world, &rank);
    comm::watchdog::start(p.deck.parallel.collective_timeout_s, rank);
    comm::watchdog::name_silent_ranks(p.deck.checkpoint.dir + "/.mini5d-watchdog", ranks);
    comm::watchdog::maybe_injected_stop("start-up");
    auto problems = grid::layout_problems(p.deck, ranks);
    for (const auto& u : unsupported_features(p.deck)) problems.push_back(u);
    if (problems.empty())  // the prediction needs a valid layout
      if (auto why = train::activation_budget_problem(p.deck); !why.empty()) problems.push_back(why);
    if (!problems.empty()) throw InputError::from_list(problems);
  });
  train::require_same_deck(world, p.deck);
  // Where the run writes, checked before it trains: checkpoint.dir locked for this run
  // and free of another run's checkpoints, output.report writable and locked.
  p.claim = train::claim_output_paths(world, p.deck);
  p.placement = topology::place_this_rank(world, p.deck);
  return p;
}

// calibrate binds ranks as a data-parallel run over all of them would (the deck's
// ranks_per_node and binding fields apply), so it measures what training gets.
Prepared prepare_calibrate(const Args& a, MPI_Comm world, int ranks) {
  using namespace mini5d;
  Prepared p;
  comm::agreed(world, [&] { p.deck = resolve_deck(a); });
  Deck as_run = p.deck;
  as_run.parallel.d = ranks;
  as_run.parallel.t = as_run.parallel.p = as_run.parallel.c = as_run.parallel.e = 1;
  p.placement = topology::place_this_rank(world, as_run);
  return p;
}

// `starting`: the watchdog's start-up phase, open since before the first collective;
// closed once the trainer is built (train).
int run(const Args& a, const Prepared& prep, MPI_Comm world, int rank, int ranks,
        std::optional<mini5d::comm::watchdog::Scope>& starting) {
  using namespace mini5d;
  if (a.command == "deck-help") {
    if (rank == 0) std::cout << deck_help();
    return 0;
  }
  if (a.command == "version") {
    const auto pf = measure::describe_platform();
    if (rank == 0)
      std::cout << "mini5d " << pf.mini5d_version << " (git " << pf.git_hash << "), Kokkos " << pf.kokkos
                << " [" << pf.backend << "], " << pf.mpi << ", HDF5 " << pf.hdf5 << ", hwloc " << pf.hwloc
                // Whether Cray's GPU transport is in (the batch scripts check with ldd, which starts no MPI).
                << ", Cray MPICH " << (comm::loaded_mpi_gtl().empty() ? "GTL not linked" : "GTL linked") << "\n";
    return 0;
  }
  if (a.command == "check") {
    if (a.deck.empty()) throw InputError(std::string("check needs a deck file\n") + kUsage);
    Deck d;
    comm::agreed(world, [&] { d = resolve_deck(a); });
    // The layout rules too, for the rank count the deck asks for (or, under mpiexec,
    // the one started), so a batch job's deck can be checked before it queues.
    if (auto problems = grid::layout_problems(d, ranks > 1 ? ranks : d.parallel.ranks()); !problems.empty())
      throw InputError::from_list(problems);
    if (auto why = train::activation_budget_problem(d); !why.empty()) throw InputError(why);
    if (rank == 0) {
      std::cout << "# " << d.origin << ": valid\n";
      for (const auto& u : unsupported_features(d)) std::cout << "# note: " << u << "\n";
      std::cout << d.to_yaml();
    }
    return 0;
  }
  if (a.command == "ceilings") {
    if (!a.overrides.empty())
      throw InputError("command line: ceilings takes \"refresh\" or a cluster file, not \"" + printable(a.overrides[0]) +
                       "\"\n" + kUsage);
    return rank == 0 ? commands::ceilings_command(a.deck, std::cout) : 0;
  }
  if (a.command == "calibrate") return commands::calibrate_command(world, prep.deck, a.calibrate, std::cout);
  if (a.command == "topo") return commands::topo_command(world, a.deck, a.overrides, std::cout);
  if (a.command != "train")
    throw InputError("command line: unknown command \"" + printable(a.command) + "\"\n" + kUsage);

  const Deck& deck = prep.deck;
  if (const char* f = std::getenv("MINI5D_FAIL"); f && std::string(f) == "fatal")
    throw std::runtime_error("MINI5D_FAIL=fatal: an injected failure on every rank, to test how fatal errors "
                             "are reported under mpiexec");
  const auto pf = measure::describe_platform();
  train::Trainer tr(deck, world);
  starting.reset();
  if (rank == 0) {
    report::print_header(std::cout, pf, tr);
    std::cout << prep.placement.text;
  }
  auto checkpoint_line = [&](const train::CheckpointEvent& e) {
    if (rank == 0) report::print_checkpoint(std::cout, e);
  };
  if (!deck.checkpoint.resume.empty()) checkpoint_line(tr.resume(deck.checkpoint.resume));
  const long every = deck.output.log_every, total = deck.train.steps;
  const long first = tr.current_step() + 1;
  tr.run(
      [&](const train::StepStats& st) {
        if (rank == 0 && (!st.note.empty() || st.step == first || st.step % every == 0 || st.step == total))
          report::print_step(std::cout, st, total);
      },
      checkpoint_line);
  if (rank == 0 && tr.stopped_by() && tr.halt_reason().empty())
    std::cout << "stopped by signal " << tr.stopped_by() << " at step " << tr.current_step()
              << " after saving a checkpoint; resume with resume=latest\n";
  std::string report_problem;
  // The report and its broadcast: one watchdog phase (rank 0 writes while the others wait).
  static const std::string kWorldAxis = "world";
  comm::watchdog::Scope finishing(kWorldAxis, "report", true);
  if (rank == 0) {
    report::print_summary(std::cout, tr);
    if (!deck.output.report.empty()) try {
        std::string note;
        const std::string path = train::report_destination(deck.output.report, prep.claim, tr.run_id(), note);
        if (!note.empty()) write_stderr("mini5d: warning: " + printable_lines(note));
        report::write_report(path, pf, tr);
        std::cout << "report written to " << printable_path(path) << "\n";
      } catch (const std::exception& e) {
        report_problem = e.what();
      }
    std::cout.flush();
  }
  // Both are the same on every rank (the report's fate is rank 0's, told to all).
  report_problem = comm::bcast_string(world, report_problem, 0);
  int status = 0;
  for (const auto& why : {tr.halt_reason(), report_problem})
    if (!why.empty()) {
      if (rank == 0) write_stderr("mini5d: error: " + printable_lines(why));
      status = 1;
    }
  return status;
}

// Training's start-up is a watchdog phase from its first collective on: a rank that
// stops before the first step must not leave the others waiting (comm/watchdog.hpp).
// The deck's limit replaces the default once the deck is read (prepare_train).
void open_startup_phase(std::optional<mini5d::comm::watchdog::Scope>& starting, int rank) {
  static const std::string kWorldAxis = "world";
  mini5d::comm::watchdog::start(mini5d::default_deck().parallel.collective_timeout_s, rank);
  starting.emplace(kWorldAxis, "start-up", true);
}

// Starts Kokkos into `kokkos`. Kokkos sees the command line plus what placement chose:
// the GPU and the host threads (Kokkos >= 3.7 spells the latter --kokkos-num-threads).
// Kokkos throws on a malformed option of its own (--kokkos-threads=-1, one of `given`):
// that is bad input (status 2, naming the command line), not a fatal error of the run.
void start_kokkos(std::optional<Kokkos::ScopeGuard>& kokkos, std::vector<std::string>& kokkos_args,
                  const std::vector<std::string>& given, const mini5d::topology::Placement& pl) {
#if defined(KOKKOS_ENABLE_CUDA) || defined(KOKKOS_ENABLE_HIP) || defined(KOKKOS_ENABLE_SYCL)
  if (pl.device_id >= 0) kokkos_args.push_back("--kokkos-device-id=" + std::to_string(pl.device_id));
#endif
#if KOKKOS_VERSION >= 30700
  if (pl.host_threads > 0) kokkos_args.push_back("--kokkos-num-threads=" + std::to_string(pl.host_threads));
#else
  if (pl.host_threads > 0) kokkos_args.push_back("--kokkos-threads=" + std::to_string(pl.host_threads));
#endif
  std::vector<char*> ptrs;
  for (auto& s : kokkos_args) ptrs.push_back(s.data());
  int n = int(ptrs.size());
  ptrs.push_back(nullptr);
  try {
    (void)kokkos.emplace(n, ptrs.data());  // Kokkos 4's ScopeGuard is [[nodiscard]]; kept in `kokkos`
  } catch (const std::exception& e) {
    if (given.empty()) throw;
    std::string opts;
    for (const auto& o : given) opts += (opts.empty() ? "" : " ") + mini5d::printable(o);
    const std::string why = e.what();
    throw mini5d::InputError("command line: " + opts + ": Kokkos refused its options: " +
                             mini5d::printable(why.substr(0, why.find('\n')), 200));
  }
}

}  // namespace

int main(int argc, char** argv) {
  // Before MPI_Init and again after it (stop_signal.hpp says why): a SIGUSR1 or SIGTERM
  // during start-up or a long resume (Slurm's --signal=USR1@N on a requeued job) is
  // kept and honoured at the first step boundary. Only for training: the other
  // commands keep the default (they end on SIGTERM).
  const bool training = argc >= 2 && std::string(argv[1]) == "train";
  if (training) {
    mini5d::train::install_stop_handlers();
    mini5d::train::raise_stop_for_test("before_mpi_init");
  }
  MPI_Init(&argc, &argv);
  if (training) {
    mini5d::train::raise_stop_for_test("after_mpi_init");
    mini5d::train::install_stop_handlers();
  }
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  // A failed MPI call (a peer or its node died) ends the job with one line of ours.
  mini5d::comm::install_mpi_error_line(rank);
  // The program's own help, before Kokkos (which would answer --help with its own).
  if (argc >= 2 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h" ||
                    std::string(argv[1]) == "help")) {
    if (rank == 0)
      std::cout << "mini5d: GPT-style training mini-app with data (ZeRO), tensor, pipeline, context and expert "
                   "parallelism\n"
                << kUsage
                << "The deck's fields: mini5d deck-help. Documentation: README.md and docs/ in the source tree\n"
                   "(docs/inputs.md: commands and decks; docs/outputs.md: what a run prints and writes).\n"
                   "Kokkos' own options (--kokkos-...) follow the command; Kokkos lists them with --kokkos-help.\n";
    MPI_Finalize();
    return 0;
  }
  // For tests that kill one rank (not the launcher): MINI5D_PID_DIR=<dir> makes each
  // rank write its PID to <dir>/rank-<r>.pid.
  if (const char* dir = std::getenv("MINI5D_PID_DIR"))
    std::ofstream(std::string(dir) + "/rank-" + std::to_string(rank) + ".pid") << getpid() << "\n";
  int status = 0;
  std::optional<mini5d::comm::watchdog::Scope> starting;
  if (training) open_startup_phase(starting, rank);
  // The library's traffic runs on its own duplicate of the world communicator.
  MPI_Comm world;
  MPI_Comm_dup(MPI_COMM_WORLD, &world);
  {
    mini5d::prof::request_unfenced_counting();  // before Kokkos starts: its tools ask then
    std::optional<Kokkos::ScopeGuard> kokkos;
    std::vector<std::string> kokkos_args(argv, argv + argc);
    auto start_kokkos_for = [&](const std::vector<std::string>& given, const mini5d::topology::Placement& pl) {
      start_kokkos(kokkos, kokkos_args, given, pl);
    };
    try {
      if (argc >= 2 && std::string(argv[1]) == "ckpt") {  // ckpt takes paths, not a deck
        std::vector<std::string> paths, given;
        for (int i = 2; i < argc; ++i)
          (std::string(argv[i]).rfind("--kokkos-", 0) == 0 ? given : paths).push_back(argv[i]);
        start_kokkos_for(given, {});
        status = mini5d::commands::ckpt_command(world, paths, std::cout);
      } else {
        const Args a = parse_args(argc, argv);
        Prepared prep;
        if (a.command == "train") prep = prepare_train(a, world, ranks);
        if (a.command == "calibrate") prep = prepare_calibrate(a, world, ranks);
        start_kokkos_for(a.kokkos, prep.placement);
        status = run(a, prep, world, rank, ranks, starting);
      }
    } catch (const mini5d::InputError& e) {
      // Every rank reads the same deck and command line, so every rank lands here
      // together; only rank 0 speaks.
      std::cout.flush();
      if (rank == 0) mini5d::write_stderr("mini5d: error: " + mini5d::printable_lines(e.what()));
      status = 2;
    } catch (const mini5d::AgreedError& e) {
      // Found and thrown by every rank together (e.g. a checkpoint save on a full disk).
      std::cout.flush();
      if (rank == 0) mini5d::write_stderr("mini5d: error: " + mini5d::printable_lines(e.what()));
      status = 1;
    } catch (const std::exception& e) {
      std::cout.flush();
      const std::string line = "mini5d: rank " + std::to_string(rank) + ": fatal: " + mini5d::printable_lines(e.what());
      status = 1;
      // Other ranks may be waiting in a collective this rank will never join: end the
      // whole job rather than leave it hanging until the batch system's time limit.
      if (ranks > 1) mini5d::abort_job_with(line, status);
      mini5d::write_stderr(line);
    }
  }
  MPI_Comm_free(&world);
  MPI_Finalize();
  return status;
}
