// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/commands/train_command.hpp"

#include <cstdlib>
#include <string>

#include "mini5d/checkpoint/commit.hpp"
#include "mini5d/comm/agreement.hpp"
#include "mini5d/core/diag.hpp"
#include "mini5d/core/error.hpp"
#include "mini5d/core/printable.hpp"
#include "mini5d/core/process_age.hpp"
#include "mini5d/grid/layout_rules.hpp"
#include "mini5d/measure/platform.hpp"
#include "mini5d/report/report.hpp"
#include "mini5d/train/startup/activation_budget.hpp"
#include "mini5d/train/startup/same_deck.hpp"
#include "mini5d/train/trainer.hpp"

namespace mini5d::commands {

namespace {
double slowest(MPI_Comm comm, double seconds) {
  MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, comm);
  return seconds;
}
}  // namespace

Prepared prepare_train(const CommandLine& a, MPI_Comm world, int ranks) {
  Prepared p;
  // Agreed over the ranks, since a deck file missing on one node fails there only.
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

int train_command(MPI_Comm world, const Prepared& prep, std::optional<comm::watchdog::Scope>& starting,
                  std::ostream& out) {
  int rank = 0;
  MPI_Comm_rank(world, &rank);
  const Deck& deck = prep.deck;
  if (const char* f = std::getenv("MINI5D_FAIL"); f && std::string(f) == "fatal")
    throw std::runtime_error("MINI5D_FAIL=fatal: an injected failure on every rank, to test how fatal errors "
                             "are reported under mpiexec");
  const auto pf = measure::describe_platform();
  train::Trainer tr(deck, world);
  // A restart in parts, each the slowest rank's: start-up (from the process's start),
  // the load, the first step after it; one line once that step is done, and the report.
  report::RestartTimes restart;
  restart.resumed = !deck.checkpoint.resume.empty();
  if (restart.resumed) restart.startup_s = slowest(world, process_age_seconds());
  starting.reset();
  if (rank == 0) {
    report::print_header(out, pf, tr.record());
    out << prep.placement.text;
  }
  auto checkpoint_line = [&](const train::CheckpointEvent& e) {
    if (rank == 0) report::print_checkpoint(out, e);
  };
  if (restart.resumed) {
    const auto loaded = tr.resume(deck.checkpoint.resume);
    checkpoint_line(loaded);
    restart.load_s = loaded.seconds;
    restart.load_bytes = loaded.bytes;
  }
  const long every = deck.output.log_every, total = deck.train.steps;
  const long first = tr.current_step() + 1;
  tr.run(
      [&](const train::StepStats& st) {
        if (rank == 0 && (!st.note.empty() || st.step == first || st.step % every == 0 || st.step == total))
          report::print_step(out, st, total);
        if (restart.resumed && st.step == first) {  // every rank sees the same steps
          restart.first_step_s = slowest(world, st.seconds);
          if (rank == 0) report::print_restart(out, restart);
        }
      },
      checkpoint_line);
  if (rank == 0 && tr.record().stopped_by && tr.record().halted.empty())
    out << "stopped by signal " << tr.record().stopped_by << " at step " << tr.current_step()
        << " after saving a checkpoint; resume with resume=latest\n";
  std::string report_problem;
  // The report and its broadcast: one watchdog phase (rank 0 writes while the others wait).
  static const std::string kWorldAxis = "world";
  comm::watchdog::Scope finishing(kWorldAxis, "report", true);
  if (rank == 0) {
    report::print_summary(out, tr.record());
    if (!deck.output.report.empty()) try {
        std::string note;
        const std::string path = train::report_destination(deck.output.report, prep.claim, tr.record().run_id, note);
        if (!note.empty()) write_stderr("mini5d: warning: " + printable_lines(note));
        report::write_report(path, pf, tr.record(), restart);
        out << "report written to " << printable_path(path) << "\n";
      } catch (const std::exception& e) {
        report_problem = e.what();
      }
    out.flush();
  }
  // Both are the same on every rank (the report's fate is rank 0's, told to all).
  report_problem = comm::bcast_string(world, report_problem, 0);
  int status = 0;
  for (const auto& why : {tr.record().halted, report_problem})
    if (!why.empty()) {
      if (rank == 0) write_stderr("mini5d: error: " + printable_lines(why));
      status = 1;
    }
  return status;
}

}  // namespace mini5d::commands
