// SPDX-License-Identifier: BSD-3-Clause
// The per-kernel breakdown of the closing summary and the report's "kernels" record:
// for each kernel family (kernels/profile.hpp) its time per step, share of the step,
// achieved GFLOP/s and GB/s, arithmetic intensity, and the fraction of the roofline's
// attainable rate min(sgemm peak, intensity x stream bandwidth) it reaches, with the
// ceilings of measure/ceilings.hpp. Steps 2..n only (the first pays page faults and the
// BLAS's set-up), as for the figure of merit.
#pragma once
#include <optional>
#include <ostream>
#include <string>

#include "mini5d/kernels/profile.hpp"
#include "mini5d/measure/ceilings.hpp"
#include "mini5d/train/run_record.hpp"

namespace mini5d::report {

struct KernelTable {
  prof::Profile profile;  // summed over the steps below
  double step_seconds = 0;  // wall time of those steps
  long steps = 0;
  std::optional<measure::Ceilings> ceilings;
};

// Fraction of the roofline's attainable rate a family reaches (0 when unknown).
double roofline_fraction(const prof::Tally& t, bool compute, const measure::Ceilings& c);
// Why the table's ceilings cannot be used (empty when they can, or when there are
// none): the cache's own reason, or a family faster than the sgemm rate, which only a
// ceiling measured too low (under load, say) allows. Stale ceilings give no roofline
// fractions, in the table or in the JSON. A memory-bound family above the stream roof
// is not stale: its data stayed in cache, which a DRAM bandwidth does not bound; it
// shows "cache" (JSON: in_cache, fraction null), never a fraction above 100%.
std::string stale_ceilings(const KernelTable& k);
bool in_cache(const prof::Tally& t, bool compute, const measure::Ceilings& c);
void print_kernel_table(std::ostream& os, const KernelTable& k);
std::string kernel_table_json(const KernelTable& k);
// The table of a run: the kernel profile over the trainer's profiled steps, with the
// cached ceilings (none cached: no roofline column).
KernelTable kernel_table(const train::RunRecord& rec);

}  // namespace mini5d::report
