// SPDX-License-Identifier: BSD-3-Clause
// One run per checkpoint directory: rank 0 creates the directory and
// holds an exclusive flock on "<dir>/mini5d.lock" for the run's lifetime, so a second
// run in the same directory is refused at start-up instead of corrupting the first
// one's checkpoints. The lock goes with the process (also on kill -9); the file stays.
#pragma once
#include <mpi.h>

#include <string>

#include "mini5d/core/file_lock.hpp"

namespace mini5d::checkpoint {

class RunLock {
 public:
  // Collective over `comm`. Creates `dir` if needed and takes the lock on rank 0.
  // Throws InputError on every rank when the directory cannot be used or another
  // process holds the lock (naming its pid and host).
  RunLock(MPI_Comm comm, const std::string& dir);
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;

  static constexpr const char* kFileName = "mini5d.lock";

 private:
  FileLock lock_;
};

}  // namespace mini5d::checkpoint
