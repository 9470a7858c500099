// SPDX-License-Identifier: BSD-3-Clause
// Messages to stderr that survive mpiexec: each is written with one write(2) call
// (whole lines, so the lines of several ranks never interleave inside a line), and
// before MPI_Abort a rank waits a moment so the launcher forwards the line before it
// tears the job down.
#pragma once
#include <string>

namespace mini5d {

// Writes `text` (a newline is added if missing) to stderr in one call, retrying only
// what a signal or a full pipe left unwritten.
void write_stderr(std::string text);

// Writes `line`, then ends the whole job with MPI_Abort(MPI_COMM_WORLD, status).
[[noreturn]] void abort_job_with(const std::string& line, int status);

}  // namespace mini5d
