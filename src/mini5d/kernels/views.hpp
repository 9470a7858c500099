// SPDX-License-Identifier: BSD-3-Clause
// View aliases shared by every kernel. Memory space and layout are spelled out so
// the same code builds for Serial/OpenMP (HostSpace) and CUDA (CudaSpace); all
// tensors are row-major (LayoutRight) so that a [rows, cols] activation is the
// C-order array a checkpoint or a BLAS call expects.
#pragma once
#include <Kokkos_Core.hpp>
#include <cstdint>

namespace mini5d {

using ExecSpace = Kokkos::DefaultExecutionSpace;
using MemSpace = ExecSpace::memory_space;
using Unmanaged = Kokkos::MemoryTraits<Kokkos::Unmanaged>;

// Managed tensors (activations, work buffers).
template <class S> using Vec = Kokkos::View<S*, Kokkos::LayoutRight, MemSpace>;
template <class S> using Mat = Kokkos::View<S**, Kokkos::LayoutRight, MemSpace>;
template <class S> using Ten3 = Kokkos::View<S***, Kokkos::LayoutRight, MemSpace>;

// Kernel arguments: unmanaged, so managed views and slices of the flat parameter
// buffer both bind to them without reference-count traffic.
template <class S> using VecU = Kokkos::View<S*, Kokkos::LayoutRight, MemSpace, Unmanaged>;
template <class S> using MatU = Kokkos::View<S**, Kokkos::LayoutRight, MemSpace, Unmanaged>;
template <class S> using Ten3U = Kokkos::View<S***, Kokkos::LayoutRight, MemSpace, Unmanaged>;
template <class S> using CVecU = Kokkos::View<const S*, Kokkos::LayoutRight, MemSpace, Unmanaged>;
template <class S> using CMatU = Kokkos::View<const S**, Kokkos::LayoutRight, MemSpace, Unmanaged>;
template <class S> using CTen3U = Kokkos::View<const S***, Kokkos::LayoutRight, MemSpace, Unmanaged>;
using CTokU = Kokkos::View<const int*, Kokkos::LayoutRight, MemSpace, Unmanaged>;
// Token ids a model holds from a forward to its backward: managed, so the reference
// keeps the caller's buffer alive (a temporary passed to a forward cannot be freed under
// the backward that reads it again).
using CTok = Kokkos::View<const int*, Kokkos::LayoutRight, MemSpace>;

using Range = Kokkos::RangePolicy<ExecSpace>;

// Hierarchical parallelism for the row-wise kernels: a team per row (or per block of
// rows or columns), its threads over consecutive columns, so that consecutive threads
// touch consecutive elements on a GPU and row reductions are team reductions. Kokkos
// picks the team size: one thread on the host backends (OpenMP included), where the
// column loop is then a plain loop the compiler vectorises.
using Team = Kokkos::TeamPolicy<ExecSpace>;
using TeamMember = Team::member_type;

// The team size of every team kernel: 0 lets Kokkos choose (Kokkos::AUTO). Only the
// tests set it, so that a threaded host build runs each team kernel with more than one
// thread per team too (the GPU's case), which AUTO never does on the host.
namespace detail {
inline int& fixed_team_size() {
  static int size = 0;
  return size;
}
}  // namespace detail
inline void set_team_size(int size) { detail::fixed_team_size() = size; }
inline int fixed_team_size() { return detail::fixed_team_size(); }

// A league of `league` teams, `lanes` vector lanes per thread.
inline Team teams(std::int64_t league, int lanes = 1) {
  const int size = detail::fixed_team_size();
  return size > 0 ? Team(int(league), size, lanes) : Team(int(league), Kokkos::AUTO, lanes);
}

}  // namespace mini5d

namespace mini5d {

// Waits for the kernels this rank queued on the default execution space instance (not
// for every device queue, as Kokkos::fence() does). Only where a host or MPI boundary
// needs it: before MPI reads a device buffer, before a host timer stops. Named where
// Kokkos takes a name (>= 3.7), so Kokkos Tools show why.
inline void fence(const char* why) {
#if KOKKOS_VERSION >= 30700
  ExecSpace().fence(why);
#else
  (void)why;
  ExecSpace().fence();
#endif
}

}  // namespace mini5d
