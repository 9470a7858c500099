// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/kernels/kokkos_events.hpp"

#include <Kokkos_Core.hpp>
#include <cstring>
#include <mutex>
#include <set>

namespace mini5d::prof {

namespace {
KokkosEvents g_events;
bool g_counting = false;
// Kokkos calls the callbacks from the thread that launches, copies or allocates: the
// host thread driving the step. The label sets are only written on that path too; the
// lock keeps a stray call from another host thread safe.
std::mutex g_labels_lock;
std::set<std::string> g_foreign_kernels, g_foreign_allocations, g_global_fences;
const char* const kPrefix = "mini5d::";

// Host-accessible memory spaces, by the name Kokkos gives them: HostSpace ("Host") and
// the pinned / host-USM spaces of the GPU backends.
bool host_space(const Kokkos_Profiling_SpaceHandle& s) { return std::strstr(s.name, "Host") != nullptr; }

bool ours(const char* name) { return name && std::strncmp(name, kPrefix, std::strlen(kPrefix)) == 0; }

// A kernel or region label of the project's: "mini5d::...", or a kernel Kokkos runs for
// one of the project's Views ("Kokkos::View::initialization [mini5d::...]").
bool our_kernel(const char* name) {
  if (ours(name)) return true;
  const char* open = name ? std::strchr(name, '[') : nullptr;
  return open && std::strncmp(name, "Kokkos::View::", 14) == 0 && ours(open + 1);
}
// An allocation label of the project's ("mini5d::...") or of the Kokkos runtime's own
// buffers: "Kokkos::..." (e.g. team scratch), or "[unlabeled]", the name Kokkos gives a
// memory space's allocate(bytes) called without one. Kokkos 3.4's OpenMP backend sizes
// its per-thread data that way (OpenMPExec::resize_thread_data); mini5d allocates only
// through named Views, never through a space's allocate. Never empty.
bool our_allocation(const char* label) {
  return ours(label) || (label && (std::strncmp(label, "Kokkos::", 8) == 0 || std::strcmp(label, "[unlabeled]") == 0));
}

void note_foreign(const char* name, std::set<std::string>& foreign) {
  std::lock_guard<std::mutex> lock(g_labels_lock);
  if (foreign.size() < 64) foreign.insert(name && *name ? name : "(unlabelled)");
}

void on_kernel(const char* name, const std::uint32_t, std::uint64_t* id) {
  ++g_events.launches;
  if (!our_kernel(name)) note_foreign(name, g_foreign_kernels);
  *id = 0;
}
void on_kernel_end(const std::uint64_t) {}
// Kokkos Kernels names the region around each BLAS call it makes ("KokkosBlas::gemm
// [TPL_BLAS,float]"): the library's own, inside the caller's kernel scope.
void on_region(const char* name) {
  if (name && std::strncmp(name, "KokkosBlas::", 12) == 0) {
    ++g_events.blas_calls;
    return;
  }
  ++g_events.regions;
  if (!ours(name)) note_foreign(name, g_foreign_kernels);
}
void on_region_end() {}

// A fence's device id carries the instance in its low 24 bits; 0 there is the global
// fence of that backend (Kokkos::fence()), 0xffffff a deep copy's own synchronisation.
void on_fence(const char* name, const std::uint32_t device_id, std::uint64_t* id) {
  const std::uint32_t instance = device_id & 0x00ffffffu;
  if (instance == 0) {
    ++g_events.fences_global;
    note_foreign(name, g_global_fences);
  } else {
    ++g_events.fences_instance;
  }
  *id = 0;
}
void on_fence_end(const std::uint64_t) {}

void on_copy(Kokkos_Profiling_SpaceHandle dst, const char*, const void*, Kokkos_Profiling_SpaceHandle src, const char*,
             const void*, std::uint64_t bytes) {
  const bool to_host = host_space(dst), from_host = host_space(src);
  if (to_host && from_host) {
    ++g_events.copies_host;
    g_events.bytes_host += double(bytes);
  } else if (to_host) {
    ++g_events.copies_to_host;
    g_events.bytes_to_host += double(bytes);
  } else if (from_host) {
    ++g_events.copies_to_device;
    g_events.bytes_to_device += double(bytes);
  } else {
    ++g_events.copies_device;
    g_events.bytes_device += double(bytes);
  }
}
void on_copy_end() {}

void on_allocate(const Kokkos_Profiling_SpaceHandle, const char* label, const void*, const std::uint64_t bytes) {
  ++g_events.allocations;
  g_events.allocated_bytes += double(bytes);
  if (!our_allocation(label)) note_foreign(label, g_foreign_allocations);
}
void on_deallocate(const Kokkos_Profiling_SpaceHandle, const char*, const void*, const std::uint64_t) {
  ++g_events.deallocations;
}

std::string joined(const std::set<std::string>& labels, int most) {
  std::lock_guard<std::mutex> lock(g_labels_lock);
  std::string out;
  int n = 0;
  for (const auto& l : labels) {
    if (n++ == most) {
      out += ", ... (" + std::to_string(labels.size()) + " in all)";
      break;
    }
    out += (out.empty() ? "" : ", ") + l;
  }
  return out;
}

#if KOKKOS_VERSION >= 30500
// Kokkos asks each tool at initialisation whether it needs a global fence around every
// callback (and assumes it does when the tool does not answer).
void on_request_tool_settings(const std::uint32_t, Kokkos::Tools::Experimental::ToolSettings* settings) {
  settings->requires_global_fencing = false;
}
#endif
}  // namespace

KokkosEvents KokkosEvents::operator-(const KokkosEvents& b) const {
  KokkosEvents d = *this;
  d.for_each_count(b, [](double mine, double before) { return mine - before; });
  return d;
}

void request_unfenced_counting() {
#if KOKKOS_VERSION >= 30500
  Kokkos::Tools::Experimental::set_request_tool_settings_callback(on_request_tool_settings);
#endif
}

// Whether a Kokkos Tools library (KOKKOS_TOOLS_LIBS) holds any callback the counters
// would take. Kokkos' profileLibraryLoaded() cannot tell: it is true as soon as any
// callback is set, the project's tool-settings request included.
bool user_tool_loaded() {
  const auto cb = Kokkos::Tools::Experimental::get_callbacks();
  return cb.begin_parallel_for || cb.begin_parallel_reduce || cb.begin_parallel_scan || cb.push_region ||
         cb.begin_deep_copy || cb.allocate_data || cb.deallocate_data
#if KOKKOS_VERSION >= 30500
         || cb.begin_fence
#endif
      ;
}

void start_counting_kokkos_events() {
  if (g_counting || user_tool_loaded()) return;
  g_counting = true;
  namespace kte = Kokkos::Tools::Experimental;
  kte::set_begin_parallel_for_callback(on_kernel);
  kte::set_begin_parallel_reduce_callback(on_kernel);
  kte::set_begin_parallel_scan_callback(on_kernel);
  kte::set_end_parallel_for_callback(on_kernel_end);
  kte::set_end_parallel_reduce_callback(on_kernel_end);
  kte::set_end_parallel_scan_callback(on_kernel_end);
  kte::set_push_region_callback(on_region);
  kte::set_pop_region_callback(on_region_end);
  kte::set_begin_deep_copy_callback(on_copy);
  kte::set_end_deep_copy_callback(on_copy_end);
  kte::set_allocate_data_callback(on_allocate);
  kte::set_deallocate_data_callback(on_deallocate);
#if KOKKOS_VERSION >= 30500
  kte::set_begin_fence_callback(on_fence);
  kte::set_end_fence_callback(on_fence_end);
#else
  (void)on_fence;
  (void)on_fence_end;
#endif
}

bool counting_kokkos_events() { return g_counting; }
KokkosEvents kokkos_events() { return g_events; }
bool fences_reported() { return KOKKOS_VERSION >= 30500; }
std::string foreign_kernel_labels(int most) { return joined(g_foreign_kernels, most); }
std::string foreign_allocation_labels(int most) { return joined(g_foreign_allocations, most); }
std::string global_fence_labels(int most) { return joined(g_global_fences, most); }

}  // namespace mini5d::prof
