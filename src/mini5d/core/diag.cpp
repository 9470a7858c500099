// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/core/diag.hpp"

#include <mpi.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <thread>

namespace mini5d {

void write_stderr(std::string text) {
  if (text.empty() || text.back() != '\n') text += '\n';
  const char* p = text.data();
  std::size_t left = text.size();
  while (left > 0) {
    const ssize_t n = ::write(STDERR_FILENO, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;  // nowhere left to report to
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

void abort_job_with(const std::string& line, int status) {
  write_stderr(line);
  // The launcher reads our stderr through a pipe; MPI_Abort kills the job at once, so
  // give it a moment to forward the line (also the lines of other failing ranks).
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  MPI_Abort(MPI_COMM_WORLD, status);
  std::abort();
}

}  // namespace mini5d
