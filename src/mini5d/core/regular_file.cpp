// SPDX-License-Identifier: BSD-3-Clause
// See regular_file.hpp. fstat on the descriptor, not stat on the name: the check and
// the read see the same file even if the name is replaced in between.
#include "mini5d/core/regular_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace mini5d {

namespace {

std::string mib(std::size_t bytes) {
  const std::size_t m = bytes >> 20;
  return m > 0 && (m << 20) == bytes ? std::to_string(m) + " MiB" : std::to_string(bytes) + " bytes";
}

// Opens `path` with `flags` | O_NONBLOCK | O_CLOEXEC and keeps it only if it is a
// regular file; -1 with `r` saying why otherwise.
int open_regular(const std::string& path, int flags, FileRead& r) {
  const int fd = ::open(path.c_str(), flags | O_NONBLOCK | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int err = errno;
    struct stat st {};
    // Opening a directory for writing fails with EISDIR; name it the same way.
    if (err == EISDIR || (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))) {
      r.status = FileRead::Status::directory;
      r.why = "a directory";
    } else if (err == ENXIO) {  // a FIFO opened for writing with no reader
      r.status = FileRead::Status::not_regular;
      r.why = "a FIFO";
    } else {
      r.status = FileRead::Status::cannot_open;
      r.why = std::strerror(err);
    }
    return -1;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    r.status = S_ISDIR(st.st_mode) ? FileRead::Status::directory : FileRead::Status::not_regular;
    r.why = file_kind(st.st_mode);
    ::close(fd);
    return -1;
  }
  // Back to blocking I/O for the read or write itself (a regular file never blocks on
  // O_NONBLOCK anyway, but a network file system may honour it).
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

}  // namespace

const char* file_kind(unsigned mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

int open_regular_file(const std::string& path, FileRead& r) { return open_regular(path, O_RDONLY, r); }

FileRead read_regular_file(const std::string& path, std::size_t max_bytes) {
  FileRead r;
  const int fd = open_regular(path, O_RDONLY, r);
  if (fd < 0) return r;
  // Read to the end rather than trusting st_size: /proc files report 0, and a file may
  // grow while it is read. One byte past the limit tells "too large" from "exactly".
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      r.status = FileRead::Status::cannot_read;
      r.why = std::strerror(errno);
      break;
    }
    if (n == 0) break;
    r.text.append(buf, static_cast<std::size_t>(n));
    if (r.text.size() > max_bytes) {
      struct stat st {};
      const bool sized = ::fstat(fd, &st) == 0 && static_cast<std::size_t>(st.st_size) > max_bytes;
      r.status = FileRead::Status::too_large;
      r.why = "larger than the limit of " + mib(max_bytes) +
              (sized ? " (" + std::to_string(static_cast<long long>(st.st_size)) + " bytes)" : "");
      break;
    }
  }
  ::close(fd);
  if (!r.ok()) r.text.clear();
  return r;
}

std::string describe(const FileRead& r) {
  switch (r.status) {
    case FileRead::Status::ok:
      return {};
    case FileRead::Status::directory:
    case FileRead::Status::not_regular:
      return "is " + r.why + ", not a regular file";
    case FileRead::Status::too_large:
      return "is " + r.why;
    case FileRead::Status::cannot_open:
    case FileRead::Status::cannot_read:
      break;
  }
  return r.why;
}

std::string regular_file_problem(const std::string& path) {
  FileRead r;
  const int fd = open_regular(path, O_RDONLY, r);
  if (fd < 0) return describe(r);
  ::close(fd);
  return {};
}

std::string write_regular_file(const std::string& path, const std::string& text) {
  FileRead r;
  // Not O_TRUNC at open: a device or FIFO is refused before anything is changed; a
  // regular file is truncated once it is known to be one.
  const int fd = open_regular(path, O_WRONLY | O_CREAT, r);
  if (fd < 0) return describe(r);
  std::string problem;
  if (::ftruncate(fd, 0) != 0) problem = std::strerror(errno);
  for (std::size_t done = 0; problem.empty() && done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) problem = std::strerror(errno);
    else done += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0 && problem.empty()) problem = std::strerror(errno);
  return problem;
}

}  // namespace mini5d
