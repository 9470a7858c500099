// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/commands/failure.hpp"

#include <iostream>
#include <string>

#include "mini5d/core/diag.hpp"
#include "mini5d/core/error.hpp"
#include "mini5d/core/printable.hpp"

namespace mini5d::commands {

int report_failure(const std::exception& e, int rank, int ranks) {
  std::cout.flush();
  if (dynamic_cast<const InputError*>(&e) || dynamic_cast<const AgreedError*>(&e)) {
    if (rank == 0) write_stderr("mini5d: error: " + printable_lines(e.what()));
    return dynamic_cast<const InputError*>(&e) ? 2 : 1;
  }
  const std::string line = "mini5d: rank " + std::to_string(rank) + ": fatal: " + printable_lines(e.what());
  // Rather than leave the job hanging until the batch system's time limit.
  if (ranks > 1) abort_job_with(line, 1);
  write_stderr(line);
  return 1;
}

}  // namespace mini5d::commands
