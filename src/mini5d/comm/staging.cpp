// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/comm/staging.hpp"

#include <algorithm>

namespace mini5d::comm {

std::shared_ptr<void> StagingPool::acquire(std::int64_t bytes, void** data) {
  bytes = std::max<std::int64_t>(bytes, 1);
  // The smallest free buffer that fits; else the largest free one, grown; else a new one.
  Slot* pick = nullptr;
  for (auto& s : slots_) {
    if (s->busy) continue;
    const auto have = std::int64_t(s->data.extent(0));
    const auto best = pick ? std::int64_t(pick->data.extent(0)) : -1;
    const bool fits = have >= bytes, best_fits = best >= bytes;
    if (!pick || (fits && (!best_fits || have < best)) || (!fits && !best_fits && have > best)) pick = s.get();
  }
  if (!pick) {
    slots_.push_back(std::make_unique<Slot>());
    pick = slots_.back().get();
  }
  if (std::int64_t(pick->data.extent(0)) < bytes) {
    const auto old = mem::view_bytes(pick->data);
    pick->data = {};  // release before allocating: the peak is what the ledger says
    pick->data = Kokkos::View<unsigned char*, StagingSpace>(
        Kokkos::ViewAllocateWithoutInitializing("mini5d::comm::staging"), std::size_t(bytes));
    charge_.grow(mem::view_bytes(pick->data) - old);
    ++allocations_;
  }
  pick->busy = true;
  *data = pick->data.data();
  // The handle frees the slot, and keeps the pool alive while a request holds it.
  auto self = shared_from_this();
  return std::shared_ptr<void>(pick, [self](void* p) { static_cast<Slot*>(p)->busy = false; });
}

}  // namespace mini5d::comm
