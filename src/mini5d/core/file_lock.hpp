// SPDX-License-Identifier: BSD-3-Clause
// An exclusive advisory lock (flock) on a small file, held until the object dies or
// the process ends (kill -9 included; the kernel drops it); the file itself stays. The
// holder writes "pid N on HOST" into the file, which a refused process quotes. One
// process; no MPI. Locks on network filesystems are only as good as their flock.
#pragma once
#include <string>

namespace mini5d {

class FileLock {
 public:
  enum class Result { locked, busy, error };

  FileLock() = default;
  ~FileLock() { release(); }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  FileLock(FileLock&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  FileLock& operator=(FileLock&& o) noexcept {
    if (this != &o) {
      release();
      fd_ = o.fd_;
      o.fd_ = -1;
    }
    return *this;
  }

  // Creates `path` if needed and takes the lock without waiting. `detail` is the
  // holder's note when busy ("" if it wrote none), the OS error on error.
  Result acquire(const std::string& path, std::string& detail);
  bool held() const { return fd_ >= 0; }
  void release();

 private:
  int fd_ = -1;
};

}  // namespace mini5d
