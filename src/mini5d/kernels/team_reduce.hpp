// SPDX-License-Identifier: BSD-3-Clause
// Row loops inside a team kernel: f(c) for c in [begin, end) (team_for), and the sum or
// maximum of f(c) over c in [0, n). With
// more than one thread in the team (GPUs, and host teams Kokkos sizes above one) they
// are team reductions over TeamThreadRange. On a one-thread team (the host backends
// under Kokkos::AUTO) they run sixteen interleaved partial results: a single running sum
// is a dependency chain the compiler may not reorder without -ffast-math, sixteen
// independent ones fill a vector register. Either way the order is fixed for a given
// team size, so results are reproducible run to run.
#pragma once
#include "mini5d/kernels/views.hpp"

namespace mini5d::kernels {

// f(c) for each c in [begin, end), over the team's threads. A one-thread team runs a
// plain loop: Kokkos' TeamThreadRange steps by the team size, a run-time stride that
// kept GCC from vectorising the softmax rows (scalar exp, 8 ns a score at seq 2048).
template <class F>
KOKKOS_INLINE_FUNCTION void team_for(const TeamMember& t, int begin, int end, const F& f) {
  if (t.team_size() == 1) {
    for (int c = begin; c < end; ++c) f(c);
    return;
  }
  Kokkos::parallel_for(Kokkos::TeamThreadRange(t, begin, end), f);
}

template <class S, class F>
KOKKOS_INLINE_FUNCTION S team_sum(const TeamMember& t, int n, const F& f) {
  if (t.team_size() == 1) {
    // Sixteen running sums. Each block of sixteen values is computed into a temporary
    // first, a plain loop the vectoriser takes whole (the softmax's exp included);
    // adding the values straight into the sums left GCC with a scalar loop.
    constexpr int L = 16;
    S acc[L];
    for (int k = 0; k < L; ++k) acc[k] = S(0);
    int c = 0;
    for (; c + L <= n; c += L) {
      S v[L];
      for (int k = 0; k < L; ++k) v[k] = f(c + k);
      for (int k = 0; k < L; ++k) acc[k] += v[k];
    }
    for (int k = 0; c < n; ++c, ++k) acc[k] += f(c);
    for (int w = L / 2; w > 0; w /= 2)  // pairwise: a fixed order
      for (int k = 0; k < w; ++k) acc[k] += acc[k + w];
    return acc[0];
  }
  S s = 0;
  Kokkos::parallel_reduce(
      Kokkos::TeamThreadRange(t, n), [&](const int c, S& a) { a += f(c); }, s);
  return s;
}

// n >= 1.
template <class S, class F>
KOKKOS_INLINE_FUNCTION S team_max(const TeamMember& t, int n, const F& f) {
  if (t.team_size() == 1) {
    constexpr int L = 16;  // as team_sum: values into a temporary, then sixteen maxima
    const S f0 = f(0);
    S acc[L];
    for (int k = 0; k < L; ++k) acc[k] = f0;
    int c = 0;
    for (; c + L <= n; c += L) {
      S v[L];
      for (int k = 0; k < L; ++k) v[k] = f(c + k);
      for (int k = 0; k < L; ++k) acc[k] = v[k] > acc[k] ? v[k] : acc[k];
    }
    for (int k = 0; c < n; ++c, ++k) {
      const S v = f(c);
      acc[k] = v > acc[k] ? v : acc[k];
    }
    S m = acc[0];
    for (int k = 1; k < L; ++k) m = acc[k] > m ? acc[k] : m;
    return m;
  }
  S m = f(0);
  Kokkos::parallel_reduce(
      Kokkos::TeamThreadRange(t, n),
      [&](const int c, S& a) {
        const S v = f(c);
        a = v > a ? v : a;
      },
      Kokkos::Max<S>(m));
  return m;
}

}  // namespace mini5d::kernels
