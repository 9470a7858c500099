// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/train/startup/output_paths.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "mini5d/comm/agreement.hpp"
#include "mini5d/checkpoint/run_identity.hpp"
#include "mini5d/core/printable.hpp"
#include "mini5d/core/replace_target.hpp"

namespace fs = std::filesystem;

namespace mini5d::train {

namespace {
// Why `file` cannot be opened for writing ("" if it can): opened, created if missing and
// then removed again. O_NONBLOCK: a FIFO fails at once instead of waiting for a reader.
std::string write_probe_problem(const std::string& file) {
  std::error_code ec;
  const bool existed = fs::exists(file, ec);
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0644);
  if (fd < 0) return std::strerror(errno);
  ::close(fd);
  if (!existed) ::unlink(file.c_str());
  return {};
}
}  // namespace

std::string report_path_problem(const std::string& path) {
  const ReplaceTarget target = replace_target(path, "output.report");
  if (!target.problem.empty()) return target.problem;
  if (auto e = write_probe_problem(target.path + ".tmp"); !e.empty())
    return printable_path(path) + ": cannot write the report (output.report): " + e;
  return {};
}

std::string trace_path_problem(const std::string& path) {
  // Written in place at the end of the run: a FIFO would block the open and a device
  // would swallow it, so only a regular file (or a new one) is taken; links are followed.
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    return printable_path(path) + ": output.trace is not a regular file (a directory, FIFO, socket or device): give a file name";
  if (auto e = write_probe_problem(path); !e.empty())
    return printable_path(path) + ": cannot write the trace (output.trace): " + e;
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
    if (!deck.output.trace.empty())
      if (auto p = trace_path_problem(deck.output.trace); !p.empty()) problems.push_back(p);
  }
  comm::raise_if_any(comm, problems, comm::ProblemKind::Input);
  return lock;
}

}  // namespace mini5d::train
