// SPDX-License-Identifier: BSD-3-Clause
// The rank line of a given layout (see given_rank.hpp).
#include "mini5d/plan/output/given_rank.hpp"

#include <string>

#include "mini5d/plan/output/explain.hpp"
#include "mini5d/plan/output/format.hpp"
#include "mini5d/plan/search/given_layout.hpp"

namespace mini5d::plan {

void print_given_rank(std::ostream& os, const Plan& given, const SearchResult& r,
                      const ClusterDesc& cl) {
  if (!given.fits) {
    os << "rank    none: the layout does not fit (needs " << gib(given.memory.total())
       << " per device, a device has " << gib(cl.device.memory) << ")";
    if (!r.top.empty())
      os << "; the fastest plan that fits is " << describe(r.top.front().layout) << " at "
         << ms(r.top.front().time.step) << "/step";
    os << "\n";
    return;
  }
  const GivenRank g = rank_of_given(r);
  os << "rank    #" << g.position << " of " << g.fitting << " fitting plans";
  if (r.top.empty() || g.position == 1) {
    os << ": the fastest the planner finds\n";
    return;
  }
  const Plan& best = r.top.front();
  const double dt = given.time.step - best.time.step;
  os << "; " << pct(dt / best.time.step) << " slower than #1 (" << describe(best.layout) << ", "
     << ms(best.time.step) << "/step)";
  const std::string why = time_split_delta(best, given);
  if (!why.empty()) os << " because of " << why;
  os << "\n";
}

}  // namespace mini5d::plan
