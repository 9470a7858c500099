// SPDX-License-Identifier: BSD-3-Clause
// See commit.hpp. The order of operations is what makes a save atomic: the data are
// durable under the temporary name before the rename, the rename is atomic in POSIX,
// and `latest` is replaced by rename too, so a reader (or a crash) sees either the old
// checkpoint and pointer or the new ones, never a half-written file under a final name.
#include "mini5d/checkpoint/commit.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <utility>

#include "mini5d/checkpoint/checkpoint.hpp"
#include "mini5d/checkpoint/h5.hpp"
#include "mini5d/checkpoint/run_identity.hpp"
#include "mini5d/core/error.hpp"
#include "mini5d/core/fresh_file.hpp"
#include "mini5d/core/regular_file.hpp"
#include "mini5d/core/printable.hpp"

namespace fs = std::filesystem;

namespace mini5d::checkpoint {
namespace detail {

namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

std::string errno_text() { return std::strerror(errno); }

// fsync a file or directory by path; empty on success.
std::string fsync_path(const std::string& path, bool directory) {
  const int fd = ::open(path.c_str(), directory ? (O_RDONLY | O_DIRECTORY) : O_RDONLY);
  if (fd < 0) return "cannot open " + path + " to sync it: " + errno_text();
  std::string problem;
  if (::fsync(fd) != 0) problem = "cannot sync " + path + ": " + errno_text();
  ::close(fd);
  return problem;
}

std::string write_pointer(const std::string& dir, const std::string& target, const std::string& run_id) {
  const std::string tmp = (fs::path(dir) / "latest.tmp").string(),
                    latest = (fs::path(dir) / "latest").string();
  const int fd = create_fresh(tmp);  // never through a stale link (core/fresh_file.hpp)
  if (fd < 0) return "cannot create " + tmp + ": " + errno_text();
  // The file name first (what resolve_checkpoint reads), then the run's identity.
  const std::string text = target + "\n" + (run_id.empty() ? "" : "run " + run_id + "\n");
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
                  ::fsync(fd) == 0;
  const std::string why = ok ? "" : errno_text();
  ::close(fd);
  if (!ok) return "cannot write " + tmp + ": " + why;
  if (::rename(tmp.c_str(), latest.c_str()) != 0)
    return "cannot rename " + tmp + " to " + latest + ": " + errno_text();
  return fsync_path(dir, true);
}

// Deletes stale temporaries and all but the newest `keep_last` checkpoints of run
// `run_id`; never the one just committed, never another run's. Best effort: a file
// that cannot be deleted is not a failed save.
void retain(const std::string& dir, const std::string& committed, int keep_last, const std::string& run_id) {
  struct Entry {
    fs::path path;
    fs::file_time_type time;
  };
  std::vector<Entry> ckpts;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string fname = e.path().filename().string();
    if (!e.is_regular_file(ec)) continue;
    if (ends_with(fname, ".h5.tmp")) {
      fs::remove(e.path(), ec);
    } else if (ends_with(fname, ".h5") && keep_last > 0 &&
               (fname == committed || run_id_of(e.path().string()) == run_id)) {
      ckpts.push_back({e.path(), fs::last_write_time(e.path(), ec)});
    }
  }
  if (keep_last <= 0) return;
  // Newest first: saves follow one another, so modification time is save order.
  std::sort(ckpts.begin(), ckpts.end(), [](const Entry& a, const Entry& b) {
    if (a.time != b.time) return a.time > b.time;
    return natural_less(b.path.filename().string(), a.path.filename().string());
  });
  int kept = 0;
  for (const auto& c : ckpts) {
    if (c.path.filename() == committed || kept < keep_last - 1) {
      if (c.path.filename() != committed) ++kept;
      continue;
    }
    fs::remove(c.path, ec);
  }
}

}  // namespace

std::string final_file(const std::string& dir, const std::string& name) {
  return (fs::path(dir) / (name + ".h5")).string();
}
std::string temp_file(const std::string& dir, const std::string& name) {
  return (fs::path(dir) / (name + ".h5.tmp")).string();
}

std::string name_problem(const std::string& name) {
  if (name.empty() || name == "latest" || name == "latest.tmp" ||
      name.find('/') != std::string::npos)
    return "invalid checkpoint name \"" + name + "\" (non-empty, no '/', not \"latest\")";
  return {};
}

std::vector<std::string> ensure_directory(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) return {dir + ": cannot create checkpoint directory: " + ec.message()};
  return {};
}

std::vector<std::string> reserve_space(const std::string& tmp, std::int64_t bytes, bool create) {
  // Created new (a stale temporary, even a link to another file, is removed, never
  // truncated through: core/fresh_file.hpp); later calls extend the file HDF5 created.
  const int fd = create ? create_fresh(tmp) : ::open(tmp.c_str(), O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return {"cannot " + std::string(create ? "create " : "open ") + tmp + ": " + errno_text()};
  // posix_fallocate returns the error number instead of setting errno. Mode 0 keeps
  // what is written and only adds blocks (and size) where there are none.
  const int err = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  const bool closed = ::close(fd) == 0;
  if (err != 0 || !closed) {
    const std::string why = err != 0 ? std::strerror(err) : errno_text();
    if (create) {
      std::error_code ec;
      fs::remove(tmp, ec);
    }
    char size[32];
    std::snprintf(size, sizeof size, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
    if (!create) return {tmp + ": " + why + " (allocating the first " + size + " of the file while it is written; the previous checkpoints are kept)"};
    return {tmp + ": " + why + " (the checkpoint needs up to " + size + "; the previous checkpoints are kept)"};
  }
  return {};
}

void release_space(const std::string& tmp) {
  // Best effort: if even this fails, the close may fail too and the watchdog is what
  // remains.
  (void)::truncate(tmp.c_str(), 0);
}

void discard_temp(const std::string& tmp) {
  std::error_code ec;
  fs::remove(tmp, ec);
}

std::vector<std::string> commit(const std::string& dir, const std::string& name, int keep_last,
                                const std::string& run_id) {
  const std::string tmp = temp_file(dir, name), fin = final_file(dir, name);
  if (auto p = fsync_path(tmp, false); !p.empty()) return {p};
  if (::rename(tmp.c_str(), fin.c_str()) != 0)
    return {"cannot rename " + tmp + " to " + fin + ": " + errno_text()};
  if (auto p = fsync_path(dir, true); !p.empty()) return {p};
  const std::string fname = fs::path(fin).filename().string();
  if (auto p = write_pointer(dir, fname, run_id); !p.empty()) return {p};
  retain(dir, fname, keep_last, run_id);
  return {};
}

FailPoints fail_points_from_env() {
  FailPoints f;
  const char* v = std::getenv("MINI5D_CKPT_FAIL");
  if (!v) return f;
  static const std::pair<const char*, FailPoint> names[] = {
      {"mid_write", FailPoint::MidWrite},         {"after_write", FailPoint::AfterWrite},
      {"write_error", FailPoint::WriteError},     {"flush_error", FailPoint::FlushError},
      {"pause_mid_write", FailPoint::PauseMidWrite}, {"small_reserve", FailPoint::SmallReserve},
      {"slow_write", FailPoint::SlowWrite},       {"stall_write", FailPoint::StallWrite}};
  const std::string s = v;
  std::string valid;
  for (const auto& [name, point] : names) valid += (valid.empty() ? "" : ", ") + std::string(name);
  for (std::size_t pos = 0; pos <= s.size();) {
    const auto comma = std::min(s.find(',', pos), s.size());
    const std::string item = s.substr(pos, comma - pos);
    bool known = item.empty();  // MINI5D_CKPT_FAIL= (empty) or a stray comma: nothing
    for (const auto& [name, point] : names)
      if (item == name) {
        f.bits |= 1u << static_cast<unsigned>(point);
        known = true;
      }
    // A misspelt fail point would let a crash-safety test pass without its failure ever
    // happening: refused (train checks it at start-up, before it trains).
    if (!known)
      throw InputError("MINI5D_CKPT_FAIL: \"" + printable(item) + "\" is not a fail point (valid: " + valid +
                       ", comma-separated)");
    pos = comma + 1;
  }
  return f;
}

void pause_for_test(MPI_Comm comm, const std::string& marker) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  if (rank == 0) {
    const int fd = ::open(marker.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) ::close(fd);
  }
  MPI_Barrier(comm);
  // Every rank waits here, sleeping, rather than in MPI, whose waits spin.
  std::error_code ec;
  for (int i = 0; i < 30 * 50 && fs::exists(marker, ec); ++i) ::usleep(20000);
  MPI_Barrier(comm);
  if (rank == 0) fs::remove(marker, ec);
}

void inject_failure(MPI_Comm comm, const char* where) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  if (rank == 0) {
    std::fprintf(stderr, "mini5d: MINI5D_CKPT_FAIL: aborting the checkpoint save %s\n", where);
    std::fflush(stderr);
  }
  MPI_Abort(comm, 3);
  std::abort();  // MPI_Abort does not return; this tells the compiler so
}

}  // namespace detail

namespace {

// Why `file` may not be read as a checkpoint or pointer ("" if it may): it must be a
// regular file itself, not a symbolic link (which may lead to another run's file:
// resuming it would continue that run's state under this run's name), a FIFO or a
// device (which HDF5 or the pointer's reader would block on).
std::string not_own_regular_file(const fs::path& file, const char* what) {
  struct stat st {};
  if (::lstat(file.c_str(), &st) != 0) return {};  // missing: the caller says so
  if (S_ISREG(st.st_mode)) return {};
  const std::string at = printable_path(file.string());
  if (S_ISLNK(st.st_mode))
    return at + ": is a symbolic link; a " + what +
           " must be a regular file in its checkpoint directory (a link may lead to another run's file)";
  return at + ": is " + file_kind(st.st_mode) + ", not a regular file; a " + what + " must be a regular file";
}

// A pointer is two short lines; anything longer is not one of ours.
constexpr std::size_t kMaxPointerBytes = 4096;

}  // namespace

std::string read_latest(const std::string& latest) {
  if (auto p = not_own_regular_file(latest, "'latest' pointer"); !p.empty()) throw InputError(p);
  const FileRead r = read_regular_file(latest, kMaxPointerBytes);
  if (!r.ok() && r.status != FileRead::Status::cannot_open)
    throw InputError(printable_path(latest) + ": " + describe(r) + " (the checkpoint pointer)");
  return r.text;
}

std::string resolve_checkpoint(const std::string& path) {
  std::error_code ec;
  const fs::path p(path);
  auto read_pointer = [](const fs::path& latest) {
    std::string line = read_latest(latest.string());
    line = line.substr(0, line.find('\n'));
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
    const std::string at = printable_path(latest.string());
    if (line.empty()) throw InputError(at + ": empty checkpoint pointer file");
    // mini5d writes a bare file name there; a path could lead anywhere (another run's
    // directory, ../../elsewhere), so it is refused, not followed.
    if (line.find('/') != std::string::npos || line == "." || line == "..") {
      throw InputError(at + ": names '" + printable_path(line) +
                       "', not a checkpoint file in its own directory (latest holds a bare file name)");
    }
    const fs::path target = latest.parent_path() / line;
    if (auto problem = not_own_regular_file(target, "checkpoint"); !problem.empty())
      throw InputError(at + ": points to " + problem);
    std::error_code e;
    if (!fs::is_regular_file(target, e))
      throw InputError(at + ": points to " + printable_path(target.string()) + ", which does not exist");
    return target.string();
  };
  if (fs::is_directory(p, ec)) {
    if (!fs::exists(fs::symlink_status(p / "latest", ec)))
      throw InputError(printable_path(path) + ": no checkpoint in this directory (no 'latest' file)");
    return read_pointer(p / "latest");
  }
  if (!fs::exists(fs::symlink_status(p, ec)))
    throw InputError(printable_path(path) + ": no such checkpoint file or directory");
  if (p.filename() == "latest") return read_pointer(p);
  if (auto problem = not_own_regular_file(p, "checkpoint"); !problem.empty()) throw InputError(problem);
  return path;
}

}  // namespace mini5d::checkpoint
