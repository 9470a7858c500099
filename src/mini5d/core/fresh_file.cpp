// SPDX-License-Identifier: BSD-3-Clause
// See fresh_file.hpp.
#include "mini5d/core/fresh_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace mini5d {

int create_fresh(const std::string& path) {
  // unlink removes a link itself, never what it points to. ENOENT is the usual case.
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) return -1;
  return ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
}

std::string write_fresh(const std::string& path, const std::string& text) {
  const int fd = create_fresh(path);
  if (fd < 0) return std::string("cannot create ") + path + ": " + std::strerror(errno);
  std::string problem;
  for (std::size_t done = 0; problem.empty() && done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) problem = "cannot write " + path + ": " + std::strerror(n < 0 ? errno : EIO);
    else done += static_cast<std::size_t>(n);
  }
  if (problem.empty() && ::fsync(fd) != 0) problem = "cannot sync " + path + ": " + std::strerror(errno);
  if (::close(fd) != 0 && problem.empty()) problem = "cannot close " + path + ": " + std::strerror(errno);
  return problem;
}

}  // namespace mini5d
