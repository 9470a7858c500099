// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/train/startup/output_paths.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "mini5d/comm/agreement.hpp"
#include "mini5d/checkpoint/run_identity.hpp"

namespace fs = std::filesystem;

namespace mini5d::train {

std::string report_path_problem(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return path + ": output.report is a directory";
  const std::string tmp = path + ".tmp";
  const bool existed = fs::exists(tmp, ec);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return path + ": cannot write the report (output.report): " + std::strerror(errno);
  ::close(fd);
  if (!existed) ::unlink(tmp.c_str());
  return {};
}

std::unique_ptr<checkpoint::RunLock> claim_output_paths(MPI_Comm comm, const Deck& deck) {
  auto lock = std::make_unique<checkpoint::RunLock>(comm, deck.checkpoint.dir);
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::vector<std::string> problems;
  if (rank == 0) {
    if (deck.checkpoint.resume.empty() && deck.checkpoint.overwrite != "true")
      if (auto p = checkpoint::other_run_problem(deck.checkpoint.dir); !p.empty()) problems.push_back(p);
    if (!deck.output.report.empty())
      if (auto p = report_path_problem(deck.output.report); !p.empty()) problems.push_back(p);
  }
  comm::raise_if_any(comm, problems, comm::ProblemKind::Input);
  return lock;
}

}  // namespace mini5d::train
