// SPDX-License-Identifier: BSD-3-Clause
// The file-system side of a checkpoint: the temporary and final names, the atomic
// commit (fsync, rename, the `latest` pointer), retention of the last K, and the
// failure-injection hook the tests use to crash a save at a chosen moment.
#pragma once
#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

namespace mini5d::checkpoint::detail {

std::string final_file(const std::string& dir, const std::string& name);  // <dir>/<name>.h5
std::string temp_file(const std::string& dir, const std::string& name);   // <dir>/<name>.h5.tmp

// Why `name` cannot name a checkpoint (empty if it can).
std::string name_problem(const std::string& name);

// Creates `dir` (and parents). Problems, if any. One rank only.
std::vector<std::string> ensure_directory(const std::string& dir);

// Creates the temporary file at full size (posix_fallocate), so that a disk without
// room for the checkpoint fails here, on one rank and before any collective write,
// rather than part-way through a collective H5Dwrite that fails on one rank only and
// leaves the others waiting (HDF5 then truncates the file and reuses the room). The
// problem names the file and the OS error, e.g. "No space left on device". One rank only.
std::vector<std::string> reserve_space(const std::string& tmp, std::int64_t bytes);

// Removes the temporary file of a failed save (best effort). One rank only.
void discard_temp(const std::string& tmp);

// After every rank closed the temporary file: fsync it, rename it to its final name,
// point `latest` at it (latest.tmp, fsync, rename, fsync the directory), then delete
// all but the newest `keep_last` checkpoints of run `run_id` (files whose stored run
// identity is another are kept) and any stale .tmp files. Problems, if any. One rank only.
std::vector<std::string> commit(const std::string& dir, const std::string& name, int keep_last,
                                const std::string& run_id);

// MINI5D_CKPT_FAIL: where a save should crash, for tests.
// mid_write and after_write abort the job there; write_error makes the last rank alone
// report a failed write half-way through (as a disk filling up after the reservation
// would), which the ranks must agree on and end cleanly.
enum class FailPoint { None, MidWrite, AfterWrite, WriteError };
FailPoint fail_point_from_env();
// Prints why (rank 0) and aborts the whole job. Collective in effect: call on all ranks.
[[noreturn]] void inject_failure(MPI_Comm comm, const char* where);

}  // namespace mini5d::checkpoint::detail
