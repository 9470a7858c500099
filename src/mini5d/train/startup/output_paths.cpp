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
#include "mini5d/train/startup/output_clash.hpp"

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

std::string report_lock_path(const std::string& path) {
  const ReplaceTarget target = replace_target(path, "output.report");
  const fs::path p(target.path.empty() ? path : target.path);
  return (p.parent_path() / ("." + p.filename().string() + ".lock")).string();
}

namespace {
// Rank 0: locks the report's path for this run; the problem, or "".
std::string lock_report(const std::string& report, FileLock& lock) {
  const std::string lock_path = report_lock_path(report);
  std::string detail;
  switch (lock.acquire(lock_path, detail)) {
    case FileLock::Result::locked:
      return {};
    case FileLock::Result::busy:
      return printable_path(report) + ": another mini5d run will write its report here (" +
             (detail.empty() ? "lock " + printable_path(lock_path) : detail) +
             "); give this run another output.report, or wait for that run to end";
    case FileLock::Result::error:
      break;
  }
  return printable_path(report) + ": cannot lock the report path (output.report): " + printable_path(lock_path) +
         ": " + detail;
}

bool after(const std::timespec& a, const std::timespec& b) {
  return a.tv_sec != b.tv_sec ? a.tv_sec > b.tv_sec : a.tv_nsec > b.tv_nsec;
}
}  // namespace

OutputClaim claim_output_paths(MPI_Comm comm, const Deck& deck) {
  OutputClaim claim;
  claim.checkpoint_dir = std::make_unique<checkpoint::RunLock>(comm, deck.checkpoint.dir);
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::vector<std::string> problems;
  if (rank == 0) {
    if (deck.checkpoint.resume.empty() && !deck.checkpoint.overwrite)
      if (auto p = checkpoint::other_run_problem(deck.checkpoint.dir); !p.empty()) problems.push_back(p);
    // An output that is an input (the deck, `latest`, ...) would destroy it at the end.
    const std::vector<std::string> clash = output_clash_problems(deck);
    problems.insert(problems.end(), clash.begin(), clash.end());
    if (clash.empty() && !deck.output.report.empty()) {
      auto p = report_path_problem(deck.output.report);
      if (p.empty()) p = lock_report(deck.output.report, claim.report);
      if (!p.empty()) problems.push_back(p);
      ::clock_gettime(CLOCK_REALTIME, &claim.claimed_at);
    }
    if (clash.empty() && !deck.output.trace.empty())
      if (auto p = trace_path_problem(deck.output.trace); !p.empty()) problems.push_back(p);
  }
  comm::raise_if_any(comm, problems, comm::ProblemKind::Input);
  return claim;
}

std::string report_destination(const std::string& deck_path, const OutputClaim& claim, const std::string& run_id,
                               std::string& note) {
  note.clear();
  struct stat st {};
  if (::stat(deck_path.c_str(), &st) != 0 || !after(st.st_mtim, claim.claimed_at)) return deck_path;
  fs::path p(deck_path);
  const std::string ext = p.extension().string();
  p.replace_filename(p.stem().string() + "." + (run_id.empty() ? "run" : run_id) + ext);
  char when[32] = "?";
  std::tm tm {};
  if (::localtime_r(&st.st_mtim.tv_sec, &tm)) std::strftime(when, sizeof when, "%H:%M:%S", &tm);
  note = printable_path(deck_path) + " was written by another process at " + when +
         ", while this run held its lock; it is kept, and this run's report goes to " + printable_path(p.string());
  return p.string();
}

}  // namespace mini5d::train
