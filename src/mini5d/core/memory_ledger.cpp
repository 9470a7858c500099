// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/core/memory_ledger.hpp"

#include <algorithm>

namespace mini5d::mem {

const char* to_string(Category c) {
  switch (c) {
    case Category::weights: return "weights";
    case Category::gradients: return "gradients";
    case Category::optimizer: return "optimizer";
    case Category::activations: return "activations";
    case Category::comm_buffers: return "comm_buffers";
    case Category::workspace: return "workspace";
    case Category::checkpoint_staging: return "checkpoint_staging";
  }
  return "?";
}

void Ledger::add(Category c, std::int64_t bytes) {
  auto& u = cat_[int(c)];
  u.current += bytes;
  u.peak = std::max(u.peak, u.current);
  total_.current += bytes;
  total_.peak = std::max(total_.peak, total_.current);
}

void Ledger::remove(Category c, std::int64_t bytes) {
  cat_[int(c)].current -= bytes;
  total_.current -= bytes;
}

void Ledger::reset_peaks() {
  for (auto& u : cat_) u.peak = u.current;
  total_.peak = total_.current;
}

Ledger& ledger() {
  static Ledger l;
  return l;
}

}  // namespace mini5d::mem
