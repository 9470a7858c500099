// SPDX-License-Identifier: BSD-3-Clause
// Counter-based random numbers: a value is a pure function of (seed, stream, index),
// with no generator state. This is what makes sharded runs reproducible: a rank that
// owns elements [a, b) of a tensor draws exactly the numbers the single-rank run drew
// for those elements, whatever the layout. The mixer is SplitMix64's finaliser, which
// passes BigCrush when fed a counter.
#pragma once
#include <Kokkos_Core.hpp>
#include <cstdint>

namespace mini5d::rng {

KOKKOS_INLINE_FUNCTION std::uint64_t mix64(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Hash of (seed, stream, index): distinct streams and seeds give unrelated sequences.
KOKKOS_INLINE_FUNCTION std::uint64_t key(std::uint64_t seed, std::uint64_t stream,
                                         std::uint64_t index) {
  return mix64(mix64(mix64(seed) ^ stream) ^ index);
}

// Uniform in (0, 1), never 0 (safe for log), from the top 53 bits.
KOKKOS_INLINE_FUNCTION double uniform(std::uint64_t h) {
  return (static_cast<double>(h >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

// Standard normal by Box-Muller from two independent uniforms of the same key.
KOKKOS_INLINE_FUNCTION double normal(std::uint64_t seed, std::uint64_t stream,
                                     std::uint64_t index) {
  const std::uint64_t h = key(seed, stream, index);
  const double u1 = uniform(h);
  const double u2 = uniform(mix64(h ^ 0x5851f42d4c957f2dULL));
#if KOKKOS_VERSION >= 40000
  return Kokkos::sqrt(-2.0 * Kokkos::log(u1)) * Kokkos::cos(6.283185307179586 * u2);
#else
  return Kokkos::Experimental::sqrt(-2.0 * Kokkos::Experimental::log(u1)) *
         Kokkos::Experimental::cos(6.283185307179586 * u2);
#endif
}

// Stable 64-bit name hash (FNV-1a): tensors are keyed by name, not by creation order.
inline std::uint64_t name_hash(const char* s) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (; *s; ++s) h = (h ^ static_cast<unsigned char>(*s)) * 0x100000001b3ULL;
  return h;
}

}  // namespace mini5d::rng
