// SPDX-License-Identifier: BSD-3-Clause
// The one way mini5d and mini5d-plan open a file they read (decks, planner files,
// `latest`, the ceilings cache, logs) or write in place (--emit-deck, the trace). A
// FIFO with no writer blocks open() for ever and a device such as /dev/zero never ends,
// so every such file is opened with O_NONBLOCK, kept only if fstat says it is a regular
// file, and read up to a limit: no read path can hang or fill the memory. Callers word
// the message (they know which field or option named the file).
#pragma once
#include <cstddef>
#include <string>

namespace mini5d {

struct FileRead {
  enum class Status { ok, cannot_open, directory, not_regular, too_large, cannot_read };
  Status status = Status::ok;
  std::string text;  // the whole file when ok
  // Why not, without the path: strerror for cannot_open/cannot_read, "a FIFO", "a
  // character device", ... for not_regular, the size and limit for too_large.
  std::string why;
  bool ok() const { return status == Status::ok; }
};

// "a FIFO", "a character device", "a directory", ... for a stat mode.
const char* file_kind(unsigned mode);

// Opens `path` read-only if it is a regular file (for a reader that maps it): the
// descriptor, or -1 with `r` saying why.
int open_regular_file(const std::string& path, FileRead& r);

// Reads the regular file `path` whole, refusing one over `max_bytes`.
FileRead read_regular_file(const std::string& path, std::size_t max_bytes);

// "" if `path` opens read-only as a regular file; else why, as FileRead::why, prefixed
// "is " for a kind ("is a FIFO, not a regular file"). For files another library opens
// (HDF5): checked first so that library never opens a FIFO or a device.
std::string regular_file_problem(const std::string& path);

// Writes `text` to `path` in place (created, or truncated if it is a regular file);
// "" on success, else why, as regular_file_problem. A FIFO or device is refused, never
// opened for writing (which would block or feed the device).
std::string write_regular_file(const std::string& path, const std::string& text);

// One line for a failed read: "is a FIFO, not a regular file", "No such file or
// directory", "is larger than the limit of 64 MiB (80000000 bytes)".
std::string describe(const FileRead& r);

}  // namespace mini5d
