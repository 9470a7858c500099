// SPDX-License-Identifier: BSD-3-Clause
// Where a file that mini5d writes by write-then-rename (the JSON report) lands, and
// whether it may land there. Renaming a new file over a path replaces whatever the path
// is, so only a regular file (or a name not yet taken) is written. A symbolic link is
// followed on purpose: its final target is written and the link stays a link. A device,
// FIFO, socket or directory, at the path or at the end of its links, is refused.
#pragma once
#include <string>

namespace mini5d {

struct ReplaceTarget {
  std::string path;     // the file to write through "<path>.tmp" and rename over
  std::string problem;  // why it may not be written ("" when it may), naming `field`
};

ReplaceTarget replace_target(const std::string& path, const std::string& field);

}  // namespace mini5d
