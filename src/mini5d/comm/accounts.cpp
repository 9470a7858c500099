// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/comm/accounts.hpp"

namespace mini5d::comm {

const char* to_string(Traffic t) {
  switch (t) {
    case Traffic::grads: return "grads";
    case Traffic::weights: return "weights";
    case Traffic::activations: return "activations";
    case Traffic::scalars: return "scalars";
  }
  return "?";
}

void Accounts::record(const std::string& axis, Traffic t, double bytes, double seconds,
                      double exposed) {
  const OpStats one{1, bytes, seconds, exposed};
  auto& a = axes_[axis];
  a.total.add(one);
  a.by_traffic[to_string(t)].add(one);
}

double Accounts::bytes(const std::string& axis, Traffic t) const {
  const auto a = axes_.find(axis);
  if (a == axes_.end()) return 0;
  const auto b = a->second.by_traffic.find(to_string(t));
  return b == a->second.by_traffic.end() ? 0 : b->second.bytes;
}

Accounts& accounts() {
  static Accounts a;
  return a;
}

}  // namespace mini5d::comm
