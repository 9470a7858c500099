// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/commands/ceilings_command.hpp"

#include <cstdio>
#include <optional>

#include "mini5d/commands/command_line.hpp"
#include "mini5d/core/error.hpp"
#include "mini5d/core/printable.hpp"
#include "mini5d/measure/ceilings.hpp"

namespace mini5d::commands {

using namespace measure;

int ceilings_command(MPI_Comm comm, const std::string& arg, const std::vector<std::string>& overrides,
                     std::ostream& os) {
  if (!overrides.empty())
    throw InputError("command line: ceilings takes \"refresh\" or a cluster file, not \"" + printable(overrides[0]) +
                     "\"\n" + kUsage);
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  if (rank != 0) return 0;
  std::optional<Ceilings> c;
  const bool from_file = !arg.empty() && arg != "refresh";
  if (from_file) {
    c = ceilings_from_cluster(arg);
    save_ceilings(*c, ceilings_cache_path());
  } else if (arg.empty()) {
    c = cached_ceilings();
  }
  if (!c) {
    c = measure_ceilings();
    save_ceilings(*c, ceilings_cache_path());
    c->source = "measured now";
  }
  char line[256];
  std::snprintf(line, sizeof(line), "ceilings (%s, %s): sgemm %.1f GFLOP/s, stream triad %.1f GB/s\n",
                c->host.c_str(), c->backend.c_str(), c->gemm_gflops, c->stream_gbs);
  os << line << "source: " << c->source << (arg.empty() && c->source == ceilings_cache_path() ? " (cached)" : "")
     << "; cache: " << ceilings_cache_path() << "\n";
  return 0;
}

}  // namespace mini5d::commands
