// SPDX-License-Identifier: BSD-3-Clause
// Scattered runs of a buffer copied into one packed buffer and back, so that tensors
// lying apart in the flat gradient buffer travel as one message (the tensor-parallel
// replicated gradients: parallel/tp/replicated_grads.hpp). A table of runs lives in
// device memory; element i of a packed range finds its run by a binary search over the
// runs' packed offsets (a unit has a handful of runs). Profiled with the residual adds
// (the same shape of work: a read and a write per element).
#pragma once
#include <cstdint>

#include "mini5d/kernels/profile.hpp"
#include "mini5d/kernels/views.hpp"

namespace mini5d::kernels {

// Run k covers packed[at_k, at_{k+1}) and buffer[from_k, from_k + at_{k+1} - at_k).
// A table of n runs ends with an (n+1)-th entry whose `at` closes the last run.
struct PackedRun {
  std::int64_t from, at;
};
using RunTable = Kokkos::View<const PackedRun*, MemSpace>;

namespace detail {
// The run of runs[first, last) that holds packed element i.
KOKKOS_INLINE_FUNCTION int run_of(const RunTable& runs, int first, int last, std::int64_t i) {
  while (last - first > 1) {
    const int mid = (first + last) / 2;
    if (runs(mid).at <= i) first = mid; else last = mid;
  }
  return first;
}

// Runs [first, last) of the table, packed [begin, end) (the caller's host copy of
// at_first and at_last: no device read here): to_packed copies buffer -> packed, else back.
template <class S>
void copy_runs(const char* label, RunTable runs, int first, int last, std::int64_t begin, std::int64_t end,
               VecU<S> buffer, VecU<S> packed, bool to_packed) {
  prof::Scope ps(prof::Family::residual, 0.0, 2.0 * double(sizeof(S)) * double(end - begin));
  Kokkos::parallel_for(label, Range(begin, end), KOKKOS_LAMBDA(const std::int64_t i) {
    const PackedRun r = runs(run_of(runs, first, last, i));
    if (to_packed)
      packed(i) = buffer(r.from + (i - r.at));
    else
      buffer(r.from + (i - r.at)) = packed(i);
  });
}
}  // namespace detail

// packed[begin, end) <- the runs [first, last) of buffer (begin = at_first, end = at_last).
template <class S>
void pack_runs(RunTable runs, int first, int last, std::int64_t begin, std::int64_t end, VecU<S> buffer,
               VecU<S> packed) {
  detail::copy_runs("mini5d::kernels::pack_runs", runs, first, last, begin, end, buffer, packed, true);
}
// The runs [first, last) of buffer <- packed[begin, end).
template <class S>
void unpack_runs(RunTable runs, int first, int last, std::int64_t begin, std::int64_t end, VecU<S> buffer,
                 VecU<S> packed) {
  detail::copy_runs("mini5d::kernels::unpack_runs", runs, first, last, begin, end, buffer, packed, false);
}

}  // namespace mini5d::kernels
