// SPDX-License-Identifier: BSD-3-Clause
// Bandwidth lookup on a link tier's measured curve.
#include "mini5d/plan/cost/cluster_desc.hpp"

#include <cmath>

namespace mini5d::plan {

namespace {
double interpolate(const BandwidthCurve& curve, double bytes) {
  if (bytes <= curve.front().first) return curve.front().second;
  if (bytes >= curve.back().first) return curve.back().second;
  for (std::size_t i = 1; i < curve.size(); ++i) {
    if (bytes <= curve[i].first) {
      // Linear in log(size): the usual shape of a bandwidth-vs-size plot.
      const double x0 = std::log(curve[i - 1].first), x1 = std::log(curve[i].first);
      const double w = (std::log(bytes) - x0) / (x1 - x0);
      return curve[i - 1].second + w * (curve[i].second - curve[i - 1].second);
    }
  }
  return curve.back().second;
}
}  // namespace

double LinkTier::bandwidth_at(double bytes, LinkOp op) const {
  const BandwidthCurve& own = op == LinkOp::gather ? gather_curve : op == LinkOp::send ? send_curve : curve;
  const BandwidthCurve& c = own.empty() ? curve : own;
  if (c.empty() || bytes <= 0) return bandwidth;
  return interpolate(c, bytes);
}

void LinkTier::scale_bandwidth(double f) {
  bandwidth *= f;
  for (BandwidthCurve* c : {&curve, &gather_curve, &send_curve})
    for (auto& point : *c) point.second *= f;
}

}  // namespace mini5d::plan
