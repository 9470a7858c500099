// SPDX-License-Identifier: BSD-3-Clause
// `mini5d topo [DECK] [section.field=value ...]`: the machine as hwloc sees it, and for
// a layout the binding each rank would get and the placement table. Run alone it
// predicts for the deck's layout (every node like this one, cut by
// parallel.ranks_per_node); under mpiexec it reports the ranks actually started,
// gathered to rank 0. It binds nothing.
#pragma once
#include <mpi.h>

#include <ostream>
#include <string>
#include <vector>

namespace mini5d::commands {

// Collective over comm; rank 0 writes to `out`. No deck path and no overrides: machine
// and bindings only. Deck problems, a layout that does not match the rank count, and a
// refused placement (printed first) throw InputError. force_placement as in
// check_placement. Returns the exit status (0).
int topo_command(MPI_Comm comm, const std::string& deck_path, const std::vector<std::string>& overrides,
                 std::ostream& out, bool force_placement = false);

}  // namespace mini5d::commands
