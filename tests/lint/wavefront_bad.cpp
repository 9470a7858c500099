// SPDX-License-Identifier: BSD-3-Clause
// The lint's known-bad snippet for a hard-coded warp width (scripts/lint-device.py rule
// 5): NVIDIA's warp is 32 lanes, AMD's wavefront 64 on MI100-MI300 (32 on RDNA).
// g++ and nvcc take all of it; on AMD every marked line uses half a wavefront or reads
// the wrong lanes. The portable width is TeamPolicy<...>::vector_length_max(). Not built
// with the project; every line marked LINT-EXPECT must be flagged, the others not.
#include <Kokkos_Core.hpp>

#define WARP_SIZE 32               // LINT-EXPECT
constexpr int kWarpSize = 32;      // LINT-EXPECT
constexpr int kTile = 32;          // fine: a tile, not a warp
using Policy = Kokkos::TeamPolicy<>;
using Member = Policy::member_type;

// Fine: the lane count and the team size come from Kokkos.
inline Policy good(int league) { return Policy(league, Kokkos::AUTO, Policy::vector_length_max()); }
inline Policy league_of_32() { return Policy(32, Kokkos::AUTO); }  // fine: 32 teams

inline Policy bad_vector(int league) {
  return Policy(league, Kokkos::AUTO, 32);  // LINT-EXPECT
}
inline Policy bad_team(int league) {
  return Kokkos::TeamPolicy<>(league, 64);  // LINT-EXPECT
}

inline int capped_lanes() {
  const int most = Policy::vector_length_max();
  return most < 32 ? most : 32;  // LINT-EXPECT
}
inline int rows(int n) { return (n + 31) / 32; }  // fine: no lane query here
inline int impl_lanes() { return Kokkos::Impl::CudaTraits::WarpSize; }  // LINT-EXPECT

inline Policy scratch_per_warp(int league) {
  Policy p(league, Kokkos::AUTO);
  return p.set_scratch_size(0, Kokkos::PerTeam(32 * sizeof(float)));  // LINT-EXPECT
}
inline Policy scratch_per_team(int league, int width) {
  Policy p(league, Kokkos::AUTO);
  return p.set_scratch_size(0, Kokkos::PerTeam(width * sizeof(float)));  // fine
}

struct WarpSum {
  Kokkos::View<float*> out;
  KOKKOS_INLINE_FUNCTION void operator()(const Member& t) const {
    float v = out(t.league_rank());
    for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffff, v, o, 32);  // LINT-EXPECT
    const unsigned active = __ballot_sync(0xffffffff, v > 0);  // LINT-EXPECT
    float sum = 0;  // fine: a Kokkos vector reduction, whatever the width
    Kokkos::parallel_reduce(
        Kokkos::ThreadVectorRange(t, kTile), [&](const int i, float& a) { a += out(i); }, sum);
    out(t.league_rank()) = sum + float(active);
  }
};
