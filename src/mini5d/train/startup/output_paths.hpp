// SPDX-License-Identifier: BSD-3-Clause
// Start-up checks of where a training run will write, before any training
// (docs/checkpoints.md): checkpoint.dir is created and locked for the run (one run per
// directory), a fresh run does not write beside another run's checkpoints unless
// checkpoint.overwrite=true, and output.report and output.trace can be created. Problems are found on
// rank 0 and thrown as InputError on every rank.
#pragma once
#include <mpi.h>

#include <memory>
#include <string>

#include "mini5d/checkpoint/run_lock.hpp"
#include "mini5d/core/deck.hpp"

namespace mini5d::train {

// Collective over `comm`. The returned lock must live as long as the run.
std::unique_ptr<checkpoint::RunLock> claim_output_paths(MPI_Comm comm, const Deck& deck);

// Why `path` cannot take the JSON report ("" if it can): probes by creating and
// removing "<path>.tmp", the name write_report writes through. One rank.
std::string report_path_problem(const std::string& path);

// Why `path` cannot take the pipeline trace ("" if it can): a regular file or a new
// one that can be created (probed, then removed). One rank.
std::string trace_path_problem(const std::string& path);

}  // namespace mini5d::train
