// SPDX-License-Identifier: BSD-3-Clause
// The gradient's global-norm kernels: squares of a flat gradient buffer, split by class
// in one pass (plain sharded tensors, tensors every tensor-parallel rank holds, expert
// tensors, key/value rows a key/value group shares, a tied head's copy of the embedding
// that another pipeline stage counts: the optimizer weights each class by who else
// holds it), the plain sum of
// squares, clipping, and the count of non-finite values the step guard reads.
// The buffer is cut into pieces of at most kNormPiece elements, each of one class; a
// team sums a piece (kernels/team_reduce.hpp) and adds it to its class.
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "mini5d/kernels/profile.hpp"
#include "mini5d/kernels/team_reduce.hpp"
#include "mini5d/kernels/views.hpp"

namespace mini5d::kernels {

constexpr int kNormClasses = 5;
constexpr std::int64_t kNormPiece = 4096;

// One team's share of the buffer: [begin, begin + size), all of one class.
struct NormPiece {
  std::int64_t begin;
  int size, cls;
};

// The per-class sums of one pass, as one reduction value (a Kokkos::Sum with a custom
// scalar: copyable, += in both forms Kokkos 3.4 and 4.x call, and its identity below).
struct ClassSums {
  double v[kNormClasses];
  KOKKOS_INLINE_FUNCTION ClassSums() {
    for (int k = 0; k < kNormClasses; ++k) v[k] = 0.0;
  }
  KOKKOS_INLINE_FUNCTION ClassSums(const ClassSums& o) {
    for (int k = 0; k < kNormClasses; ++k) v[k] = o.v[k];
  }
  KOKKOS_INLINE_FUNCTION ClassSums& operator=(const ClassSums& o) {
    for (int k = 0; k < kNormClasses; ++k) v[k] = o.v[k];
    return *this;
  }
  KOKKOS_INLINE_FUNCTION ClassSums& operator+=(const ClassSums& o) {
    for (int k = 0; k < kNormClasses; ++k) v[k] += o.v[k];
    return *this;
  }
  KOKKOS_INLINE_FUNCTION void operator+=(const volatile ClassSums& o) volatile {
    for (int k = 0; k < kNormClasses; ++k) v[k] += o.v[k];
  }
};

// The pieces of a buffer of n elements in which `classed[k]` (k >= 1) lists the
// [begin, end) runs of class k (disjoint); every other element is class 0.
inline std::vector<NormPiece> norm_pieces(std::int64_t n,
                                          const std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>>& classed) {
  struct Run {
    std::int64_t begin, end;
    int cls;
  };
  std::vector<Run> runs;
  for (std::size_t k = 0; k < classed.size(); ++k)
    for (const auto& [b, e] : classed[k])
      if (e > b) runs.push_back({b, e, int(k)});
  std::sort(runs.begin(), runs.end(), [](const Run& a, const Run& b) { return a.begin < b.begin; });
  std::vector<NormPiece> pieces;
  auto cut = [&](std::int64_t b, std::int64_t e, int cls) {
    for (std::int64_t at = b; at < e; at += kNormPiece)
      pieces.push_back({at, int(std::min(kNormPiece, e - at)), cls});
  };
  std::int64_t at = 0;
  for (const Run& r : runs) {
    cut(at, r.begin, 0);
    cut(r.begin, r.end, r.cls);
    at = r.end;
  }
  cut(at, n, 0);
  return pieces;
}

// Squares of g summed per class, in one launch.
template <class S>
std::array<double, kNormClasses> class_squares(Kokkos::View<const NormPiece*, MemSpace> pieces, CVecU<S> g) {
  prof::Scope ps(prof::Family::norm, 2.0 * double(g.extent(0)), double(sizeof(S)) * double(g.extent(0)));
  ClassSums sums;
  Kokkos::parallel_reduce(
      "mini5d::kernels::grad_class_squares", teams(std::int64_t(pieces.extent(0))),
      KOKKOS_LAMBDA(const TeamMember& t, ClassSums& acc) {
        const NormPiece pc = pieces(t.league_rank());
        const double part = team_sum<double>(t, pc.size, [&](const int i) {
          const double x = double(g(pc.begin + i));
          return x * x;
        });
        Kokkos::single(Kokkos::PerTeam(t), [&]() { acc.v[pc.cls] += part; });
      },
      Kokkos::Sum<ClassSums>(sums));
  std::array<double, kNormClasses> out{};
  for (int k = 0; k < kNormClasses; ++k) out[std::size_t(k)] = sums.v[k];
  return out;
}

// Sum of squares of g (a team per block of kNormPiece elements, blocks added in double).
template <class S>
double sum_of_squares(CVecU<S> g) {
  double s = 0;
  const std::int64_t n = std::int64_t(g.extent(0));
  prof::Scope ps(prof::Family::norm, 2.0 * double(n), double(sizeof(S)) * double(n));
  const std::int64_t blocks = (n + kNormPiece - 1) / kNormPiece;
  Kokkos::parallel_reduce(
      "mini5d::kernels::grad_sumsq", teams(blocks),
      KOKKOS_LAMBDA(const TeamMember& t, double& acc) {
        const std::int64_t i0 = std::int64_t(t.league_rank()) * kNormPiece;
        const int len = int(i0 + kNormPiece < n ? kNormPiece : n - i0);
        const double part = team_sum<double>(t, len, [&](const int i) {
          const double v = double(g(i0 + i));
          return v * v;
        });
        Kokkos::single(Kokkos::PerTeam(t), [&]() { acc += part; });
      },
      s);
  return s;
}

// The factor global-norm clipping multiplies the gradient by: max_norm / norm when the
// norm is above the threshold, else 1 (max_norm <= 0: clipping off).
inline double clip_factor(double norm, double max_norm) {
  return max_norm > 0 && norm > max_norm ? max_norm / norm : 1.0;
}

// g *= clip_factor(norm, max_norm); returns the factor. (The trainer folds the factor
// into the AdamW update instead; this pass is for callers without an optimizer.)
template <class S>
double clip_by_global_norm(VecU<S> g, double norm, double max_norm) {
  const double factor = clip_factor(norm, max_norm);
  if (factor == 1.0) return 1.0;
  const S f = S(factor);
  prof::Scope ps(prof::Family::norm, double(g.extent(0)), 2.0 * double(sizeof(S)) * double(g.extent(0)));
  Kokkos::parallel_for(
      "mini5d::kernels::clip", Range(0, std::int64_t(g.extent(0))), KOKKOS_LAMBDA(const std::int64_t i) { g(i) *= f; });
  return factor;
}

// Elements of v that are NaN or infinite.
inline std::int64_t count_nonfinite(CVecU<float> v) {
  std::int64_t n = 0;
  prof::Scope ps(prof::Family::norm, double(v.extent(0)), double(sizeof(float)) * double(v.extent(0)));
  Kokkos::parallel_reduce(
      "mini5d::kernels::count_nonfinite", Range(0, std::int64_t(v.extent(0))),
      KOKKOS_LAMBDA(const std::int64_t i, std::int64_t& acc) {
        const float x = v(i);
        // x - x is 0 for every finite x and NaN for NaN and +-inf.
        if (!(x - x == 0.0f)) ++acc;
      },
      n);
  return n;
}

}  // namespace mini5d::kernels

namespace Kokkos {
template <>
struct reduction_identity<mini5d::kernels::ClassSums> {
  KOKKOS_FORCEINLINE_FUNCTION static mini5d::kernels::ClassSums sum() { return mini5d::kernels::ClassSums(); }
};
}  // namespace Kokkos
