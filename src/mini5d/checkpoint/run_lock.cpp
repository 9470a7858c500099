// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/checkpoint/run_lock.hpp"

#include <filesystem>
#include <vector>

#include "mini5d/comm/agreement.hpp"
#include "mini5d/core/printable.hpp"

namespace fs = std::filesystem;

namespace mini5d::checkpoint {

RunLock::RunLock(MPI_Comm comm, const std::string& dir) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::vector<std::string> problems;
  if (rank == 0) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (!fs::is_directory(dir)) {
      problems.push_back(printable_path(dir) + ": checkpoint.dir is not a usable directory (" +
                         (ec ? ec.message() : std::string("a file is in the way")) + ")");
    } else {
      const std::string path = (fs::path(dir) / kFileName).string();
      std::string detail;
      switch (lock_.acquire(path, detail)) {
        case FileLock::Result::locked:
          break;
        case FileLock::Result::busy:
          problems.push_back(printable_path(dir) + ": another mini5d run is using this checkpoint directory (" +
                             (detail.empty() ? "lock " + path : detail) +
                             "); wait for it to end, or give this run another checkpoint.dir");
          break;
        case FileLock::Result::error:
          problems.push_back(printable_path(dir) + ": checkpoint.dir is not writable (cannot lock " + path + ": " + detail + ")");
          break;
      }
    }
  }
  comm::raise_if_any(comm, problems, comm::ProblemKind::Input);
}

}  // namespace mini5d::checkpoint
