// SPDX-License-Identifier: BSD-3-Clause
// Counts what the Kokkos runtime is asked to do, through Kokkos Tools callbacks
// registered inside this process (no tool library to load): kernel launches, fences
// (global, and per execution space instance), deep copies by direction with their
// bytes, allocations, and profiling regions. The trainer takes the difference over each
// step (train/step_events.hpp): what a GPU pays for in launch latency, synchronisation
// and host round trips, counted on any backend.
//
// Directions come from the memory spaces Kokkos names: host (HostSpace, pinned and
// other host-accessible spaces) or device (everything else). On a host backend every
// copy is host to host, and a copy whose source and destination are the same memory (a
// host mirror of host memory) is still counted: on a GPU it is a real transfer.
//
// Fences are reported to tools from Kokkos 3.5 on (fences_reported()); with Debian's
// Kokkos 3.4 the fence counts stay 0 and the summary says they are not reported.
// Kokkos fences globally around each callback unless the tool says it needs no fences
// (Kokkos 3.5 on: a tool-settings request answered at Kokkos::initialize).
// request_unfenced_counting(), called before Kokkos::initialize, answers it: the
// counters only count, so they add no fence and do not serialise a GPU's queue. With
// Kokkos 3.4 (no such request) counting fences (there: the host, where a fence is
// free). A tool library loaded through KOKKOS_TOOLS_LIBS keeps its own callbacks and
// its own answer: the project then counts nothing (counting_kokkos_events() is false)
// rather than take the user's tool's callbacks away.
#pragma once
#include <cstdint>
#include <string>

namespace mini5d::prof {

struct KokkosEvents {
  std::int64_t launches = 0;  // parallel_for, parallel_reduce, parallel_scan
  std::int64_t fences_global = 0, fences_instance = 0;
  std::int64_t copies_to_host = 0, copies_to_device = 0, copies_host = 0, copies_device = 0;
  double bytes_to_host = 0, bytes_to_device = 0, bytes_host = 0, bytes_device = 0;
  std::int64_t allocations = 0, deallocations = 0;
  double allocated_bytes = 0;
  std::int64_t regions = 0;     // pushRegion calls of the project's
  std::int64_t blas_calls = 0;  // Kokkos Kernels' BLAS calls (each pushes a "KokkosBlas::" region)

  std::int64_t copies() const { return copies_to_host + copies_to_device + copies_host + copies_device; }
  KokkosEvents operator-(const KokkosEvents& before) const;
  // Applies f(mine, other's) to every count, so a difference or a maximum is one loop.
  template <class F>
  void for_each_count(const KokkosEvents& o, F&& f) {
    for (auto m : {&KokkosEvents::launches, &KokkosEvents::fences_global, &KokkosEvents::fences_instance,
                   &KokkosEvents::copies_to_host, &KokkosEvents::copies_to_device, &KokkosEvents::copies_host,
                   &KokkosEvents::copies_device, &KokkosEvents::allocations, &KokkosEvents::deallocations,
                   &KokkosEvents::regions, &KokkosEvents::blas_calls})
      this->*m = std::int64_t(f(double(this->*m), double(o.*m)));
    for (auto m : {&KokkosEvents::bytes_to_host, &KokkosEvents::bytes_to_device, &KokkosEvents::bytes_host,
                   &KokkosEvents::bytes_device, &KokkosEvents::allocated_bytes})
      this->*m = f(this->*m, o.*m);
  }
};

// Before Kokkos::initialize: the counters need no global fence around each callback.
void request_unfenced_counting();
// Registers the callbacks (once; later calls do nothing), unless a Kokkos Tools library
// is loaded. After Kokkos::initialize.
void start_counting_kokkos_events();
bool counting_kokkos_events();
// Totals since start_counting_kokkos_events (all zero before it).
KokkosEvents kokkos_events();
// Whether this Kokkos reports fences to tools (3.5 and later).
bool fences_reported();

// Labels seen since counting started that are not the project's, joined with ", " (at
// most `most`, then the count). Kernels and regions: "mini5d::..." is the project's,
// and so is a kernel Kokkos runs for one of its Views ("Kokkos::View::initialization
// [mini5d::...]"); Kokkos Kernels' regions around its BLAS calls ("KokkosBlas::...")
// are the library's, inside a project kernel. Allocations: "mini5d::..." or the Kokkos runtime's own buffers
// ("Kokkos::..."); an unlabelled one shows as "(unlabelled)". For the test that every
// label is the project's, so Kokkos Tools and vendor profilers show the code's names.
std::string foreign_kernel_labels(int most = 5);
std::string foreign_allocation_labels(int most = 5);
// The names of the global fences seen since counting started (Kokkos names its own:
// "Kokkos::deep_copy: ..."), so a failed no-global-fence budget says where they came from.
std::string global_fence_labels(int most = 5);

}  // namespace mini5d::prof
