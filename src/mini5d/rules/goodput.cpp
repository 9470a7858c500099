// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/rules/goodput.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace mini5d::goodput {

double ettr(const Inputs& in, long long interval_steps) {
  const double m = in.job_mtbf_s();
  const double tau = double(interval_steps) * in.step_s;
  // A write longer than the compute it overlaps makes the next snapshot wait for it; the
  // first cycle after a restart has no write to wait for.
  const double wait = std::max(0.0, in.write_s - tau);
  // expm1 keeps the small-rate case exact: (tau + C) / M is often 1e-3 or less.
  const double attempts =
      std::expm1((tau + in.save_s + wait) / m) * std::exp((in.restart_s + in.write_s - wait) / m);
  return (tau / m) / attempts;
}

double young_interval_s(const Inputs& in) { return std::sqrt(2 * in.save_s * in.job_mtbf_s()); }

long long young_interval_steps(const Inputs& in) {
  return std::max(1LL, std::llround(young_interval_s(in) / in.step_s));
}

namespace {
// "field: value is out of range (valid: range)"; NaN fails every range.
std::string check(const char* field, double v, bool ok, const char* range) {
  if (ok && std::isfinite(v)) return "";
  char value[32];
  std::snprintf(value, sizeof value, "%g", v);
  return std::string(field) + ": " + value + " is out of range (valid: " + range + ")";
}
}  // namespace

std::string invalid_field(const Inputs& in) {
  for (const std::string& e :
       {check("step_s", in.step_s, in.step_s > 0, "seconds > 0"),
        check("save_s", in.save_s, in.save_s >= 0, "seconds >= 0"),
        check("write_s", in.write_s, in.write_s >= 0, "seconds >= 0"),
        check("restart_s", in.restart_s, in.restart_s >= 0, "seconds >= 0"),
        check("node_mtbf_s", in.node_mtbf_s, in.node_mtbf_s > 0, "seconds > 0"),
        check("nodes", double(in.nodes), in.nodes >= 1, "an integer >= 1")})
    if (!e.empty()) return e;
  return "";
}

}  // namespace mini5d::goodput
