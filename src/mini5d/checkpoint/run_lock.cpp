// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/checkpoint/run_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "mini5d/comm/agreement.hpp"

namespace fs = std::filesystem;

namespace mini5d::checkpoint {

namespace {
std::string read_all(int fd) {
  std::string s;
  char buf[256];
  if (::lseek(fd, 0, SEEK_SET) < 0) return s;
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0 && s.size() < 1024;) s.append(buf, std::size_t(n));
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}
}  // namespace

RunLock::RunLock(MPI_Comm comm, const std::string& dir) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::vector<std::string> problems;
  if (rank == 0) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (!fs::is_directory(dir)) {
      problems.push_back(dir + ": checkpoint.dir is not a usable directory (" +
                         (ec ? ec.message() : std::string("a file is in the way")) + ")");
    } else {
      const std::string path = (fs::path(dir) / kFileName).string();
      fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
      if (fd_ < 0) {
        problems.push_back(dir + ": checkpoint.dir is not writable (cannot create " + path + ": " +
                           std::strerror(errno) + ")");
      } else if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
        const int err = errno;
        const std::string holder = read_all(fd_);
        ::close(fd_);
        fd_ = -1;
        problems.push_back(err == EWOULDBLOCK
                               ? dir + ": another mini5d run is using this checkpoint directory (" +
                                     (holder.empty() ? std::string("lock ") + path : holder) +
                                     "); wait for it to end, or give this run another checkpoint.dir"
                               : dir + ": cannot lock " + path + ": " + std::strerror(err));
      } else {
        char host[256] = {};
        ::gethostname(host, sizeof host - 1);
        const std::string me = "pid " + std::to_string(::getpid()) + " on " + host + "\n";
        // Who holds it, for the message a second run prints; best effort.
        const bool noted = ::ftruncate(fd_, 0) == 0 && ::pwrite(fd_, me.data(), me.size(), 0) == ssize_t(me.size());
        (void)noted;
      }
    }
  }
  comm::raise_if_any(comm, problems, comm::ProblemKind::Input);
}

RunLock::~RunLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the flock
}

}  // namespace mini5d::checkpoint
