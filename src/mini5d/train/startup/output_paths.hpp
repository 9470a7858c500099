// SPDX-License-Identifier: BSD-3-Clause
// Start-up checks of where a training run will write, before any training
// (docs/checkpoints.md): checkpoint.dir is created and locked for the run (one run per
// directory), a fresh run does not write beside another run's checkpoints unless
// checkpoint.overwrite=true, output.report and output.trace can be created, and the
// report's path is locked for the run (one running run per report path, so two runs
// started in one directory cannot overwrite each other's report). Problems are found
// on rank 0 and thrown as InputError on every rank.
#pragma once
#include <mpi.h>

#include <ctime>
#include <memory>
#include <string>

#include "mini5d/checkpoint/run_lock.hpp"
#include "mini5d/core/deck.hpp"
#include "mini5d/core/file_lock.hpp"

namespace mini5d::train {

// What a run holds on the paths it writes, for as long as it runs. Locks live on rank 0.
struct OutputClaim {
  std::unique_ptr<checkpoint::RunLock> checkpoint_dir;
  FileLock report;            // "<dir>/.<report name>.lock" beside output.report
  std::timespec claimed_at{};  // when the report path was claimed (rank 0's clock)
};

// Collective over `comm`. The returned claim must live as long as the run.
OutputClaim claim_output_paths(MPI_Comm comm, const Deck& deck);

// The lock file that guards the report at `path` (links followed, as the report is).
std::string report_lock_path(const std::string& path);

// Where rank 0 writes the report at the end of the run: `deck_path`, or, when that
// file was replaced after `claim.claimed_at` by a process that did not hold the lock
// (an older mini5d, or a filesystem whose flock is not shared between hosts), a
// sibling named after this run ("mini5d-report.<run id>.json") so neither report is
// lost; `note` then says so. One rank.
std::string report_destination(const std::string& deck_path, const OutputClaim& claim, const std::string& run_id,
                               std::string& note);

// Why `path` cannot take the JSON report ("" if it can): probes by creating and
// removing "<path>.tmp", the name write_report writes through. One rank.
std::string report_path_problem(const std::string& path);

// Why `path` cannot take the pipeline trace ("" if it can): a regular file or a new
// one that can be created (probed, then removed). One rank.
std::string trace_path_problem(const std::string& path);

}  // namespace mini5d::train
