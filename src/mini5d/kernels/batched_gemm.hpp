// SPDX-License-Identifier: BSD-3-Clause
// Many small matrix products with the same transposes and scalars, as one call:
//
//   for i in [0, count):  C_i = alpha op(A_i) op(B_i) + beta C_i
//
// where at(i) gives product i's operands (GemmOperands: three LayoutRight views,
// possibly strided, e.g. one (batch, head) matrix of a [B*H, T, x] tensor or a causal
// block of P). at must be callable on host and device: a KOKKOS_LAMBDA or a functor
// with a KOKKOS_INLINE_FUNCTION operator().
//
// Attention makes B*H such products per step (times the causal blocks), each a
// 64 x (64..T) x hd panel or so. Two ways to run them:
//   * blas_loop: one KokkosBlas::gemm per product. On a host execution space this is
//     the fastest (each product runs at the host BLAS's full rate, and the launch
//     costs nothing), so it is the default there.
//   * teams: ONE launch, a team per product running KokkosBatched::TeamVectorGemm
//     (threads over the rows of C, vector lanes over its consecutive columns, the k
//     sum serial per element). On a GPU B*H separate cuBLAS calls would be B*H small
//     launches, so it is the default on device execution spaces. Each element's sum
//     runs in k order whatever the team size: results are reproducible.
// Kokkos Kernels 3.4 (Debian) has no BLAS-backed KokkosBatched::BatchedGemm (4.x
// does), but TeamVectorGemm with Algo::Gemm::Unblocked and all four N/T combinations
// exists in 3.4 and 4.x with the same signature, so the team path builds on both.
// Tests force either path with ScopedGemmPath to check that they agree.
#pragma once
#include <KokkosBatched_Gemm_Decl.hpp>
#include <KokkosBlas3_gemm.hpp>
#include <type_traits>

#include "mini5d/kernels/views.hpp"

namespace mini5d::kernels {

enum class Op { N, T };  // op(X) = X or X^T
enum class GemmPath { automatic, blas_loop, teams };

// The process-wide choice; automatic means teams on a device execution space and the
// BLAS loop on a host one. Set by tests (ScopedGemmPath), never by the model.
inline GemmPath& gemm_path_setting() {
  static GemmPath p = GemmPath::automatic;
  return p;
}

inline bool gemm_uses_teams() {
  const GemmPath p = gemm_path_setting();
  if (p == GemmPath::automatic) return !std::is_same<ExecSpace, Kokkos::DefaultHostExecutionSpace>::value;
  return p == GemmPath::teams;
}

// Forces a path for the lifetime of the object (tests).
class ScopedGemmPath {
 public:
  explicit ScopedGemmPath(GemmPath p) : old_(gemm_path_setting()) { gemm_path_setting() = p; }
  ~ScopedGemmPath() { gemm_path_setting() = old_; }
  ScopedGemmPath(const ScopedGemmPath&) = delete;
  ScopedGemmPath& operator=(const ScopedGemmPath&) = delete;

 private:
  GemmPath old_;
};

template <class S>
struct GemmOperands {
  CMatU<S> a, b;
  MatU<S> c;
};

namespace detail {

template <Op O>
using BatchedTrans =
    std::conditional_t<O == Op::N, KokkosBatched::Trans::NoTranspose, KokkosBatched::Trans::Transpose>;

// Vector lanes per team: the GPU's warp, which TeamPolicy's vector_length_max is (32 on
// CUDA, a 64-lane wavefront on an AMD MI GPU; not a number written here). The host
// backends ignore the request (one lane per team thread). Each element's k sum is one
// lane's serial loop, so the lane count changes no result.
inline int gemm_lanes() { return Team::vector_length_max(); }

// A team per product. A functor rather than a KOKKOS_LAMBDA so that the caller's
// device lambda `at` is a plain member, not a capture of one extended lambda by another.
template <Op TA, Op TB, class S, class At>
struct TeamGemmBatch {
  S alpha, beta;
  At at;
  KOKKOS_INLINE_FUNCTION void operator()(const TeamMember& tm) const {
    const GemmOperands<S> o = at(tm.league_rank());
    KokkosBatched::TeamVectorGemm<TeamMember, BatchedTrans<TA>, BatchedTrans<TB>,
                                  KokkosBatched::Algo::Gemm::Unblocked>::invoke(tm, alpha, o.a, o.b, beta, o.c);
  }
};

template <Op TA, Op TB, class S, class At>
void gemm_teams(const char* label, S alpha, S beta, int count, const At& at) {
  Kokkos::parallel_for(label, teams(count, gemm_lanes()), TeamGemmBatch<TA, TB, S, At>{alpha, beta, at});
}

template <class S, class At>
void gemm_blas_loop(Op ta, Op tb, S alpha, S beta, int count, const At& at) {
  const char* na = ta == Op::N ? "N" : "T";
  const char* nb = tb == Op::N ? "N" : "T";
  for (int i = 0; i < count; ++i) {
    const GemmOperands<S> o = at(i);
    KokkosBlas::gemm(na, nb, alpha, o.a, o.b, beta, o.c);
  }
}

}  // namespace detail

// C_i = alpha op_a(A_i) op_b(B_i) + beta C_i for i in [0, count); `label` names the
// one launch of the team path (mini5d::kernels::...).
template <class S, class At>
void batched_gemm(const char* label, Op ta, Op tb, S alpha, S beta, int count, const At& at) {
  if (count <= 0) return;
  if (!gemm_uses_teams()) return detail::gemm_blas_loop<S>(ta, tb, alpha, beta, count, at);
  if (ta == Op::N && tb == Op::N) return detail::gemm_teams<Op::N, Op::N, S>(label, alpha, beta, count, at);
  if (ta == Op::N && tb == Op::T) return detail::gemm_teams<Op::N, Op::T, S>(label, alpha, beta, count, at);
  if (ta == Op::T && tb == Op::N) return detail::gemm_teams<Op::T, Op::N, S>(label, alpha, beta, count, at);
  return detail::gemm_teams<Op::T, Op::T, S>(label, alpha, beta, count, at);
}

}  // namespace mini5d::kernels
