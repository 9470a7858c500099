// SPDX-License-Identifier: BSD-3-Clause
// The spine tier of an oversubscribed inter-node network (see oversubscription.hpp).
#include "mini5d/plan/cost/oversubscription.hpp"

#include <string>

namespace mini5d::plan {

namespace {
std::string ratio_text(double ratio) {
  std::string s = std::to_string(ratio);
  s.erase(s.find_last_not_of('0') + 1);
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}
}  // namespace

void add_oversubscribed_spine(ClusterDesc& cl, long long nodes_per_leaf, double ratio) {
  if (ratio <= 1 || cl.tiers.empty()) return;
  LinkTier spine = cl.tiers.back();
  LinkTier& leaf = cl.tiers.back();
  leaf.span_devices = double(nodes_per_leaf) * double(cl.devices_per_node);
  spine.span_devices = 0;  // the outermost tier spans everything
  spine.name += " through the spine (" + ratio_text(ratio) + ":1)";
  spine.scale_bandwidth(1 / ratio);  // a measured curve keeps its shape through the spine
  cl.tiers.push_back(spine);
}

}  // namespace mini5d::plan
