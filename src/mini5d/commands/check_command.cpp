// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/commands/check_command.hpp"

#include <string>

#include "mini5d/comm/agreement.hpp"
#include "mini5d/core/error.hpp"
#include "mini5d/grid/layout_rules.hpp"
#include "mini5d/train/startup/activation_budget.hpp"

namespace mini5d::commands {

int check_command(MPI_Comm comm, const CommandLine& a, std::ostream& out) {
  int rank = 0, ranks = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &ranks);
  if (a.deck.empty()) throw InputError(std::string("check needs a deck file\n") + kUsage);
  Deck d;
  comm::agreed(comm, [&] { d = resolve_deck(a); });
  if (auto problems = grid::layout_problems(d, ranks > 1 ? ranks : d.parallel.ranks()); !problems.empty())
    throw InputError::from_list(problems);
  if (auto why = train::activation_budget_problem(d); !why.empty()) throw InputError(why);
  if (rank == 0) {
    out << "# " << d.origin << ": valid\n";
    for (const auto& u : unsupported_features(d)) out << "# note: " << u << "\n";
    out << d.to_yaml();
  }
  return 0;
}

int deck_help_command(MPI_Comm comm, std::ostream& out) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  if (rank == 0) out << deck_help();
  return 0;
}

}  // namespace mini5d::commands
