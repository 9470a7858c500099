// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/core/file_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace mini5d {

namespace {
std::string read_note(int fd) {
  std::string s;
  char buf[256];
  for (ssize_t n; s.size() < 1024 && (n = ::pread(fd, buf, sizeof buf, off_t(s.size()))) > 0;) s.append(buf, std::size_t(n));
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}
}  // namespace

FileLock::Result FileLock::acquire(const std::string& path, std::string& detail) {
  release();
  detail.clear();
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
  if (fd < 0) {
    detail = std::strerror(errno);
    return Result::error;
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    detail = err == EWOULDBLOCK ? read_note(fd) : std::strerror(err);
    ::close(fd);
    return err == EWOULDBLOCK ? Result::busy : Result::error;
  }
  fd_ = fd;
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  const std::string me = "pid " + std::to_string(::getpid()) + " on " + host + "\n";
  // Who holds it, for the message a second process prints; best effort.
  const bool noted = ::ftruncate(fd_, 0) == 0 && ::pwrite(fd_, me.data(), me.size(), 0) == ssize_t(me.size());
  (void)noted;
  return Result::locked;
}

void FileLock::release() {
  if (fd_ >= 0) ::close(fd_);  // releases the flock
  fd_ = -1;
}

}  // namespace mini5d
