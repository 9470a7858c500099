// SPDX-License-Identifier: BSD-3-Clause
// The deck without training: `mini5d check DECK [section.field=value ...]` validates a
// deck and prints it resolved; `mini5d deck-help` lists every field, its range and
// default.
#pragma once
#include <mpi.h>

#include <ostream>

#include "mini5d/commands/command_line.hpp"

namespace mini5d::commands {

// Collective over comm; rank 0 prints. The layout rules are checked for the rank count
// the deck asks for (or, under mpiexec, the one started), so a batch job's deck can be
// checked before it queues. Every problem throws InputError. Returns 0.
int check_command(MPI_Comm comm, const CommandLine& a, std::ostream& out);

// Rank 0 prints. Returns 0.
int deck_help_command(MPI_Comm comm, std::ostream& out);

}  // namespace mini5d::commands
