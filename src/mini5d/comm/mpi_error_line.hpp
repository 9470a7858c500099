// SPDX-License-Identifier: BSD-3-Clause
// One clear line when MPI itself fails. A peer rank or its node that dies mid-step makes
// MPICH over UCX report the lost connection from the next wait on it, and its default
// handler ends the job with "Fatal error in internal_Testall: See the MPI_ERROR field
// in MPI_Status for the error code". This handler ends it the same way (MPI_Abort) after
// one line on stderr naming this rank, its host and MPI's own text, and saying what to
// do: resume from the last checkpoint, with a smaller layout if a node is gone
// (docs/two-tier-cluster.md, losing a node). A peer that hangs instead of dying is the
// collective watchdog's (watchdog.hpp).
#pragma once

namespace mini5d::comm {

// Sets the handler on MPI_COMM_WORLD. Call right after MPI_Init: every communicator made
// from the world afterwards (MPI_Comm_dup, MPI_Comm_split) inherits it, but those of
// MPI_Comm_create_group in MPICH 4.0, on which grid/process_grid.cpp sets it.
void install_mpi_error_line(int world_rank);

}  // namespace mini5d::comm
