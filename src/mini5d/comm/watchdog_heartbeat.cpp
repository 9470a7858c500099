// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/comm/watchdog_heartbeat.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace mini5d::comm::watchdog {

namespace {
std::string file_of(const std::string& dir, int rank) { return dir + "/rank-" + std::to_string(rank); }

double mtime_of(const struct stat& st) { return double(st.st_mtim.tv_sec) + 1e-9 * double(st.st_mtim.tv_nsec); }


// mkdir -p: at start-up the checkpoint folder may not exist yet.
bool make_dirs(const std::string& dir) {
  for (std::size_t at = dir.find('/', 1); at != std::string::npos; at = dir.find('/', at + 1))
    if (::mkdir(dir.substr(0, at).c_str(), 0755) != 0 && errno != EEXIST) return false;
  return ::mkdir(dir.c_str(), 0755) == 0 || errno == EEXIST;
}
}  // namespace

void write_heartbeat(const std::string& dir, int rank, const std::string& what) {
  if (!make_dirs(dir)) return;
  // O_NOFOLLOW: a link planted under the name is not followed (and the write fails).
  const int fd = ::open(file_of(dir, rank).c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return;
  const std::string line = what + "\n";
  ssize_t n = ::write(fd, line.data(), line.size());
  (void)n;
  ::futimens(fd, nullptr);  // a rewrite of the same bytes still moves the time
  ::close(fd);
}

void remove_heartbeat(const std::string& dir, int rank) { ::unlink(file_of(dir, rank).c_str()); }

std::optional<std::vector<int>> silent_ranks(const std::string& dir, int world_size, double stale_s) {
  std::vector<double> when(std::size_t(std::max(world_size, 0)), -1.0);
  double newest = -1;
  for (int r = 0; r < world_size; ++r) {
    struct stat st;
    if (::lstat(file_of(dir, r).c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      when[std::size_t(r)] = mtime_of(st);
      newest = std::max(newest, when[std::size_t(r)]);
    }
  }
  if (newest < 0) return std::nullopt;  // no heartbeat at all (an unwritable folder)
  std::vector<int> out;
  for (int r = 0; r < world_size; ++r)
    if (when[std::size_t(r)] < 0 || when[std::size_t(r)] < newest - stale_s) out.push_back(r);
  return out;
}

std::string rank_list(const std::vector<int>& ranks) {
  constexpr std::size_t kNamed = 8;
  std::string s = ranks.size() == 1 ? "rank " : "ranks ";
  const std::size_t named = std::min(ranks.size(), kNamed);
  for (std::size_t i = 0; i < named; ++i) {
    if (i > 0) s += (i + 1 == named && ranks.size() <= kNamed) ? " and " : ", ";
    s += std::to_string(ranks[i]);
  }
  if (ranks.size() > kNamed) s += " and " + std::to_string(ranks.size() - kNamed) + " more";
  return s;
}

}  // namespace mini5d::comm::watchdog
