// SPDX-License-Identifier: BSD-3-Clause
// The `mini5d ceilings` command: the sgemm and stream-triad ceilings the kernel table
// compares each kernel family against (measure/ceilings.hpp does the measuring).
#pragma once
#include <ostream>
#include <string>

namespace mini5d::commands {

// `mini5d ceilings [refresh | CLUSTER.yaml]`: prints the cached ceilings, measuring
// (and caching) them when there are none or when refresh is asked for, or caching a
// cluster file's figures instead.
int ceilings_command(const std::string& arg, std::ostream& os);

}  // namespace mini5d::commands
