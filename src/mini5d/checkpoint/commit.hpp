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

// Gives the temporary file its full size in allocated blocks (posix_fallocate), so
// that a disk without room for the checkpoint fails here, on one rank and before any
// collective write, rather than part-way through a collective H5Dwrite that fails on
// one rank only. With `create` the file is made (or emptied) first and removed again
// on failure: the check before HDF5 opens it. Without, the file HDF5 has just created
// is extended in place: HDF5 creates with truncation, which frees what the first call
// allocated, and from here on it only writes inside the allocated blocks (tmpfs keeps
// the pages, ext4 and Lustre's ldiskfs keep unwritten extents; where a file system has
// no fallocate, glibc writes one byte per block, which allocates too) until its final
// flush sets the file's size to what it used. The problem names the file and the OS
// error, e.g. "No space left on device". One rank only.
std::vector<std::string> reserve_space(const std::string& tmp, std::int64_t bytes, bool create);

// Empties the temporary file of a failed save, so that HDF5's closing of it (which
// writes the file's metadata) finds room on a full disk and every rank closes it the
// same way; its content is discarded anyway. One rank only, before the close.
void release_space(const std::string& tmp);

// Removes the temporary file of a failed save (best effort). One rank only.
void discard_temp(const std::string& tmp);

// After every rank closed the temporary file: fsync it, rename it to its final name,
// point `latest` at it (latest.tmp, fsync, rename, fsync the directory), then delete
// all but the newest `keep_last` checkpoints of run `run_id` (files whose stored run
// identity is another are kept) and any stale .tmp files. Problems, if any. One rank only.
std::vector<std::string> commit(const std::string& dir, const std::string& name, int keep_last,
                                const std::string& run_id);

// MINI5D_CKPT_FAIL, for tests: a comma-separated list of where a save should fail.
// mid_write and after_write abort the job there; write_error makes the last rank alone
// report a failed write half-way through (an I/O error on one rank), flush_error the
// same just before the file is flushed and closed, which the
// ranks must agree on and end cleanly. pause_mid_write makes every rank wait half-way
// through (up to 30 s) until the test removes the marker file <name>.h5.tmp.paused that
// rank 0 creates (the test fills the disk meanwhile); small_reserve reserves a quarter
// of the room the file needs, so that such a disk runs out under the write. slow_write
// makes every rank sleep 0.2 s before each dataset (a large, healthy save); stall_write
// makes the last rank stop for 120 s half-way through (a rank that hangs mid-save).
enum class FailPoint {
  MidWrite, AfterWrite, WriteError, FlushError, PauseMidWrite, SmallReserve, SlowWrite, StallWrite
};
struct FailPoints {
  unsigned bits = 0;
  bool has(FailPoint f) const { return (bits >> static_cast<unsigned>(f)) & 1u; }
};
FailPoints fail_points_from_env();
// pause_mid_write: rank 0 creates `marker`, then every rank waits (sleeping, up to
// 30 s) until it is gone. Collective.
void pause_for_test(MPI_Comm comm, const std::string& marker);
// Prints why (rank 0) and aborts the whole job. Collective in effect: call on all ranks.
[[noreturn]] void inject_failure(MPI_Comm comm, const char* where);

}  // namespace mini5d::checkpoint::detail

namespace mini5d::checkpoint {

// The text of a `latest` pointer, read through the one reader (core/regular_file.hpp)
// after checking it is a regular file itself (not a link, FIFO or device): InputError
// naming it otherwise; "" if it is missing.
std::string read_latest(const std::string& latest);

}  // namespace mini5d::checkpoint
