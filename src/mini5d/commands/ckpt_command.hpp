// SPDX-License-Identifier: BSD-3-Clause
// `mini5d ckpt info|verify PATH`: inspect a checkpoint (a directory, meaning its
// latest, or a file) without training. Collective over `comm`; rank 0 prints.
#pragma once
#include <mpi.h>

#include <ostream>
#include <string>
#include <vector>

namespace mini5d::commands {

// args: what follows "ckpt" on the command line. Returns the exit status; problems
// (bad arguments, unreadable file, checksum mismatches) throw InputError.
int ckpt_command(MPI_Comm comm, const std::vector<std::string>& args, std::ostream& out);

}  // namespace mini5d::commands
