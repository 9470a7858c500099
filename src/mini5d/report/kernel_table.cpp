// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/report/kernel_table.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "mini5d/core/json_text.hpp"
#include "mini5d/report/text_format.hpp"

namespace mini5d::report {

namespace {
double rate(double work, double seconds) { return seconds > 0 ? work / seconds * 1e-9 : 0.0; }

// Seconds per profile, of every family and of the matrix products alone.
struct Totals {
  double timed = 0, gemm = 0;
};

// Calls visit(family, tally) for each family that ran, in family order; the totals
// count every family, so the table and the JSON share one definition of "other".
template <class Visit>
Totals for_each_family(const KernelTable& k, Visit&& visit) {
  Totals sum;
  for (int i = 0; i < prof::kFamilies; ++i) {
    const auto f = prof::Family(i);
    const auto& t = k.profile.tally[std::size_t(i)];
    sum.timed += t.seconds;
    if (prof::compute_bound(f)) sum.gemm += t.seconds;
    if (t.calls == 0) continue;
    visit(f, t);
  }
  return sum;
}
}  // namespace

std::string stale_ceilings(const KernelTable& k) {
  if (!k.ceilings) return "";
  if (!k.ceilings->stale.empty()) return k.ceilings->stale;
  std::string why;
  for_each_family(k, [&](prof::Family f, const prof::Tally& t) {
    // Only the GEMM rate can be beaten by a stale figure alone: a memory-bound family
    // above the stream roof ran from cache (in_cache), which no DRAM ceiling bounds.
    const double frac = prof::compute_bound(f) ? roofline_fraction(t, true, *k.ceilings)
                                               : rate(t.flops, t.seconds) / k.ceilings->gemm_gflops;
    if (why.empty() && frac > 1.0)
      why = std::string(prof::family_name(f)) + " ran at " + fmt("%.0f%%", 100.0 * frac) + " of the sgemm rate";
  });
  return why;
}

bool in_cache(const prof::Tally& t, bool compute, const measure::Ceilings& c) {
  return !compute && roofline_fraction(t, false, c) > 1.0;
}

double roofline_fraction(const prof::Tally& t, bool compute, const measure::Ceilings& c) {
  if (!(t.seconds > 0) || !(c.gemm_gflops > 0) || !(c.stream_gbs > 0)) return 0.0;
  // A product is held to the GEMM peak; the other kernels to the roof at their
  // intensity (a kernel counted as moving no bytes is held to the peak).
  if (compute || t.bytes <= 0) return rate(t.flops, t.seconds) / c.gemm_gflops;
  const double attainable = std::min(c.gemm_gflops, t.flops / t.bytes * c.stream_gbs);
  const double flop_frac = attainable > 0 ? rate(t.flops, t.seconds) / attainable : 0.0;
  return std::max(flop_frac, rate(t.bytes, t.seconds) / c.stream_gbs);
}

void print_kernel_table(std::ostream& os, const KernelTable& k) {
  if (k.steps <= 0 || !(k.step_seconds > 0)) return;
  const double per = 1.0 / double(k.steps);
  const std::string stale = stale_ceilings(k);
  const bool roof = k.ceilings && stale.empty();
  os << "kernel breakdown (rank 0, " << k.steps << " step(s) after the first; ";
  if (roof)
    os << "ceilings: sgemm " << fmt("%.1f", k.ceilings->gemm_gflops) << " GFLOP/s, stream "
       << fmt("%.1f", k.ceilings->stream_gbs) << " GB/s, from " << k.ceilings->source << "):\n";
  else if (k.ceilings)
    os << "the ceilings in " << k.ceilings->source << " are stale, " << stale << ": " << measure::kRemeasureCeilings
       << "):\n";
  else
    os << "no ceilings: run `mini5d ceilings` once to measure them):\n";
  os << "  family           ms/step  share   GFLOP/s    GB/s  of roof\n";
  const Totals sum = for_each_family(k, [&](prof::Family f, const prof::Tally& t) {
    char line[160];
    const double frac = roof ? roofline_fraction(t, prof::compute_bound(f), *k.ceilings) : 0.0;
    const std::string col = !k.ceilings ? "  n/a"
                            : !roof     ? "stale"
                            : in_cache(t, prof::compute_bound(f), *k.ceilings) ? "cache"
                                                                               : fmt("%5.1f%%", 100.0 * frac);
    std::snprintf(line, sizeof(line), "  %-14s %9.2f %5.1f%% %9.2f %7.2f  %s\n", prof::family_name(f),
                  1e3 * t.seconds * per, 100.0 * t.seconds / k.step_seconds, rate(t.flops, t.seconds),
                  rate(t.bytes, t.seconds), col.c_str());
    os << line;
  });
  char line[160];
  std::snprintf(line, sizeof(line), "  %-14s %9.2f %5.1f%%   (communication, data, host work, launches)\n", "other",
                1e3 * std::max(0.0, k.step_seconds - sum.timed) * per,
                100.0 * std::max(0.0, k.step_seconds - sum.timed) / k.step_seconds);
  os << line;
  os << "  matrix products (gemm + attention_gemm): " << fmt("%.1f%%", 100.0 * sum.gemm / k.step_seconds)
     << " of the step\n";
}

std::string kernel_table_json(const KernelTable& k) {
  std::ostringstream o;
  const double per = k.steps > 0 ? 1.0 / double(k.steps) : 0.0;
  const std::string stale = stale_ceilings(k);
  const bool roof = k.ceilings && stale.empty();
  o << "{\"steps\": " << k.steps << ", \"step_seconds\": " << jnum(k.step_seconds * per) << ", \"ceilings\": ";
  if (k.ceilings)
    o << "{\"gemm_gflops\": " << jnum(k.ceilings->gemm_gflops) << ", \"stream_gbs\": " << jnum(k.ceilings->stream_gbs)
      << ", \"source\": " << json_quote(k.ceilings->source)
      << ", \"stale\": " << (roof ? std::string("null") : json_quote(stale)) << "}";
  else
    o << "null";
  o << ", \"families\": [";
  bool first = true;
  const Totals sum = for_each_family(k, [&](prof::Family f, const prof::Tally& t) {
    o << (first ? "" : ", ") << "\n      {\"name\": " << json_quote(prof::family_name(f))
      << ", \"bound\": " << (prof::compute_bound(f) ? "\"compute\"" : "\"memory\"")
      << ", \"seconds_per_step\": " << jnum(t.seconds * per)
      << ", \"share\": " << jnum(k.step_seconds > 0 ? t.seconds / k.step_seconds : 0.0)
      << ", \"flops_per_step\": " << jnum(t.flops * per) << ", \"bytes_per_step\": " << jnum(t.bytes * per)
      << ", \"calls_per_step\": " << jnum(double(t.calls) * per) << ", \"gflops\": " << jnum(rate(t.flops, t.seconds))
      << ", \"gbs\": " << jnum(rate(t.bytes, t.seconds)) << ", \"roofline_fraction\": ";
    const bool cached = roof && in_cache(t, prof::compute_bound(f), *k.ceilings);
    if (roof && !cached) o << jnum(roofline_fraction(t, prof::compute_bound(f), *k.ceilings)); else o << "null";
    o << ", \"in_cache\": " << (cached ? "true" : "false") << "}";
    first = false;
  });
  o << "],\n    \"other_seconds_per_step\": " << jnum(std::max(0.0, k.step_seconds - sum.timed) * per)
    << ", \"gemm_share\": " << jnum(k.step_seconds > 0 ? sum.gemm / k.step_seconds : 0.0) << "}";
  return o.str();
}

KernelTable kernel_table(const train::RunRecord& rec) {
  KernelTable k;
  k.profile = prof::profile();
  k.step_seconds = rec.profiled_seconds;
  k.steps = rec.profiled_steps;
  k.ceilings = measure::cached_ceilings();
  return k;
}

}  // namespace mini5d::report
