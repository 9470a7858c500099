// SPDX-License-Identifier: BSD-3-Clause
// Creating the temporary file of a write-then-rename (`<report>.tmp`, `latest.tmp`,
// `step-N.h5.tmp`, the ceilings cache's and calibrate's `.tmp`). A stale temporary left
// by a crash, or planted as a symbolic link to another file, must not be opened as it
// is: O_TRUNC through a link truncates the link's target, wherever it is. So the old
// name is unlinked first and the file is created new with O_CREAT | O_EXCL |
// O_NOFOLLOW: it is this process's own file or the open fails.
#pragma once
#include <string>

namespace mini5d {

// A new, empty file at `path` (whatever was there removed first), opened write-only;
// the descriptor, or -1 with errno set.
int create_fresh(const std::string& path);

// create_fresh, then `text` written and synced; "" on success, else the error text.
std::string write_fresh(const std::string& path, const std::string& text);

}  // namespace mini5d
