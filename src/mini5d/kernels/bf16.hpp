// SPDX-License-Identifier: BSD-3-Clause
// The bf16 storage type, and the two conversions every mixed-precision kernel uses.
// This header alone decides which type that is:
//
//   * Kokkos >= 4 whose Kokkos::Experimental::bhalf_t is a real 2-byte type: that type.
//     Read in Kokkos 4.6.01 (core/src/impl/Kokkos_Half_FloatingPointWrapper.hpp and
//     core/src/Cuda/Kokkos_Cuda_Half_Impl_Type.hpp): only CUDA (>= 11 with __nv_bfloat16
//     outside Kepler/Maxwell) and SYCL define a bf16 implementation, wrapped in
//     floating_point_wrapper, 2 bytes. HIP defines half_t only (HIP/Kokkos_HIP_Half_Impl_Type.hpp).
//     When none is defined (Serial, OpenMP, Threads and HIP builds) Kokkos falls back to
//     `using bhalf_t = float` and sets
//     KOKKOS_BHALF_T_IS_FLOAT to true: 4 bytes and no rounding, which would halve no
//     message and no activation, so those builds use the project type instead.
//   * Otherwise (Kokkos 3.4 as Debian ships it has no bhalf_t at all; host-only and HIP
//     Kokkos 4 as above): mini5d::BFloat16, 16 bits of storage (the top half of an IEEE
//     float), round-to-nearest-even from float, NaN and Inf preserved, denormals kept.
//     Those are the bytes of rocBLAS's rocblas_bfloat16, so on HIP the vendor GEMM reads
//     them as stored (gemm_bf16_vendor.hpp).
//
// Kernels never compute in bf16: they widen on load (to_float), compute and reduce in
// fp32, and narrow on store (to_bf16). Arithmetic<S>::Acc names the type a kernel of
// storage type S computes in: S itself for float and double, float for bf16.
#pragma once
#include <Kokkos_Core.hpp>
#include <cstdint>
#include <type_traits>

namespace mini5d {

// 16-bit bf16 storage: sign, 8 exponent bits, 7 mantissa bits (8 bits of precision with
// the implicit one, unit roundoff 2^-8). Only conversions, no arithmetic: a kernel that
// forgot to widen does not compile.
struct BFloat16 {
  std::uint16_t bits;
};

namespace detail {
KOKKOS_INLINE_FUNCTION std::uint32_t float_bits(float f) {
  union {
    float f;
    std::uint32_t u;
  } v;
  v.f = f;
  return v.u;
}
KOKKOS_INLINE_FUNCTION float bits_float(std::uint32_t u) {
  union {
    std::uint32_t u;
    float f;
  } v;
  v.u = u;
  return v.f;
}
}  // namespace detail

// Round to nearest, ties to even, on the bit pattern: adding 0x7fff plus the lowest kept
// bit carries into the kept half exactly when the dropped half is above one half, or
// equal to it with the kept half odd. The same rule is right for denormals (the grid is
// uniform there) and rounds past the largest finite value to Inf. A NaN keeps its sign
// and is made quiet, so that dropping its low payload bits cannot turn it into an Inf.
KOKKOS_INLINE_FUNCTION BFloat16 round_to_bfloat16(float f) {
  const std::uint32_t u = detail::float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return BFloat16{std::uint16_t((u >> 16) | 0x0040u)};
  const std::uint32_t lsb = (u >> 16) & 1u;
  return BFloat16{std::uint16_t((u + 0x7fffu + lsb) >> 16)};
}
KOKKOS_INLINE_FUNCTION float bfloat16_to_float(BFloat16 b) { return detail::bits_float(std::uint32_t(b.bits) << 16); }

#if KOKKOS_VERSION >= 40000 && defined(KOKKOS_BHALF_T_IS_FLOAT)
#if !KOKKOS_BHALF_T_IS_FLOAT
#define MINI5D_BF16_IS_KOKKOS 1
#endif
#endif

#ifdef MINI5D_BF16_IS_KOKKOS
using bf16 = Kokkos::Experimental::bhalf_t;
KOKKOS_INLINE_FUNCTION float to_float(bf16 v) { return Kokkos::Experimental::cast_from_bhalf<float>(v); }
// Kokkos' CUDA conversion is __float2bfloat16: round to nearest even as well.
KOKKOS_INLINE_FUNCTION bf16 to_bf16(float v) { return Kokkos::Experimental::cast_to_bhalf(v); }
constexpr const char* kBf16TypeName = "Kokkos::Experimental::bhalf_t";
#else
using bf16 = BFloat16;
KOKKOS_INLINE_FUNCTION float to_float(bf16 v) { return bfloat16_to_float(v); }
KOKKOS_INLINE_FUNCTION bf16 to_bf16(float v) { return round_to_bfloat16(v); }
constexpr const char* kBf16TypeName = "mini5d::BFloat16";
#endif
static_assert(sizeof(bf16) == 2, "the bf16 storage type must be 2 bytes, or it halves nothing");

// What a kernel of storage type S computes, accumulates and keeps statistics in.
template <class S>
struct Arithmetic {
  using Acc = S;
  // Load and store: the identity for float and double, so that their instantiations
  // compile to exactly the code they did before the kernels were templated on storage.
  KOKKOS_INLINE_FUNCTION static Acc widen(S v) { return v; }
  KOKKOS_INLINE_FUNCTION static S narrow(Acc v) { return v; }
};
template <>
struct Arithmetic<bf16> {
  using Acc = float;
  KOKKOS_INLINE_FUNCTION static float widen(bf16 v) { return to_float(v); }
  KOKKOS_INLINE_FUNCTION static bf16 narrow(float v) { return to_bf16(v); }
};
template <class S>
using acc_t = typename Arithmetic<S>::Acc;
// A bf16 instantiation: the paths that are not yet written for bf16 (mixture of experts,
// full attention, ring attention) are compiled out of it with `if constexpr`.
template <class S>
inline constexpr bool is_bf16_v = std::is_same_v<S, bf16>;

// Short spellings for kernel bodies: ld(x(i)) and st<S>(v).
template <class S>
KOKKOS_INLINE_FUNCTION acc_t<S> ld(S v) {
  return Arithmetic<S>::widen(v);
}
template <class S>
KOKKOS_INLINE_FUNCTION S st(acc_t<S> v) {
  return Arithmetic<S>::narrow(v);
}

}  // namespace mini5d
