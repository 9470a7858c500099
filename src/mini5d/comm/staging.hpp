// SPDX-License-Identifier: BSD-3-Clause
// Host staging buffers for MPI when it is not handed device pointers (docs/architecture.md).
// Each communicator owns one pool: one buffer per operation in flight (a non-blocking
// collective keeps its buffer until it completes), reused across calls and grown when a
// call needs more, never freed before the communicator. Their bytes are charged to
// comm_buffers in the memory ledger. The memory is pinned host memory where the backend
// has it (SharedHostPinnedSpace, CudaHostPinnedSpace), so the device copies run at full
// bandwidth; plain host memory on host backends, which normally need no staging at all.
#pragma once
#include <Kokkos_Core.hpp>
#include <cstdint>
#include <memory>
#include <vector>

#include "mini5d/core/memory_ledger.hpp"

namespace mini5d::comm {

#if defined(KOKKOS_HAS_SHARED_HOST_PINNED_SPACE)
using StagingSpace = Kokkos::SharedHostPinnedSpace;
#elif defined(KOKKOS_ENABLE_CUDA)
using StagingSpace = Kokkos::CudaHostPinnedSpace;
#else
using StagingSpace = Kokkos::HostSpace;
#endif

class StagingPool : public std::enable_shared_from_this<StagingPool> {
 public:
  // A buffer of at least `bytes`, this caller's until the returned handle and all its
  // copies are gone; `*data` receives its address.
  std::shared_ptr<void> acquire(std::int64_t bytes, void** data);

  int buffers() const { return int(slots_.size()); }
  std::int64_t bytes() const { return charge_.bytes(); }
  long allocations() const { return allocations_; }  // buffers allocated or regrown, ever

 private:
  struct Slot {
    Kokkos::View<unsigned char*, StagingSpace> data;
    bool busy = false;
  };
  std::vector<std::unique_ptr<Slot>> slots_;
  mem::Charge charge_{mem::Category::comm_buffers, 0};
  long allocations_ = 0;
};

}  // namespace mini5d::comm
