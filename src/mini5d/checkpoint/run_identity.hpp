// SPDX-License-Identifier: BSD-3-Clause
// Run identity: every training run has one (16 hex digits), stored in each checkpoint
// it writes (root attribute "run_id") and on the second line of `latest` ("run <id>").
// A resumed run continues the identity of its checkpoint. Retention deletes only the
// current run's files, and a fresh run refuses a directory that holds another run's
// checkpoints unless checkpoint.overwrite=true.
#pragma once
#include <string>
#include <vector>

namespace mini5d::checkpoint {

// A new identity from the clock, the host, the process id and random_device. Not collective.
std::string new_run_id();

// The identity stored in a checkpoint file: "" if it has none (written before run
// identities) or cannot be read. Opens the file with HDF5's serial driver: one rank.
std::string run_id_of(const std::string& file);

// The identity on the second line of `<dir>/latest`, "" if none. One rank.
std::string run_id_of_latest(const std::string& dir);

// For a fresh run about to write into `dir`: a one-line message naming the directory
// and the run whose checkpoints are there, or "" when there are none. One rank.
std::string other_run_problem(const std::string& dir);

}  // namespace mini5d::checkpoint
