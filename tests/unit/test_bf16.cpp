// SPDX-License-Identifier: BSD-3-Clause
// The bf16 storage type of kernels/bf16.hpp: its size, and float -> bf16 rounding to
// nearest even with NaN, Inf, denormals and the largest finite value, checked by bit
// pattern, on the host and (through a kernel) on the execution space the kernels use.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <limits>
#include <vector>

#include "mini5d/kernels/bf16.hpp"
#include "mini5d/kernels/views.hpp"

using namespace mini5d;

namespace {
float from_bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
std::uint16_t bits_of(bf16 b) {
  std::uint16_t u;
  std::memcpy(&u, &b, sizeof u);
  return u;
}
std::uint16_t rne(float f) { return bits_of(to_bf16(f)); }
// What a truncating conversion (the common wrong one) gives: the top 16 bits.
std::uint16_t truncated(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return std::uint16_t(u >> 16);
}
}  // namespace

TEST_CASE("bf16 is a 2-byte type", "[bf16]") {
  STATIC_REQUIRE(sizeof(bf16) == 2);
  STATIC_REQUIRE(sizeof(BFloat16) == 2);
  INFO("bf16 storage type: " << kBf16TypeName);
  CHECK(std::string(kBf16TypeName).size() > 0);
  // An array of them packs at 2 bytes a value (no padding), so a message or an activation
  // buffer of n values is 2n bytes; and the 2 bytes are the top half of the float.
  bf16 a[3] = {to_bf16(1.0f), to_bf16(-2.0f), to_bf16(0.5f)};
  CHECK(reinterpret_cast<const char*>(&a[2]) - reinterpret_cast<const char*>(&a[0]) == 4);
  CHECK(bits_of(a[1]) == truncated(-2.0f));
  CHECK(to_float(a[2]) == 0.5f);
}

TEST_CASE("bf16 conversion: exact values and every bf16 pattern round-trips", "[bf16]") {
  CHECK(rne(1.0f) == 0x3f80);
  CHECK(rne(-2.0f) == 0xc000);
  CHECK(rne(0.5f) == 0x3f00);
  CHECK(rne(0.0f) == 0x0000);
  CHECK(rne(-0.0f) == 0x8000);
  CHECK(rne(3.0f) == 0x4040);
  CHECK(to_float(to_bf16(1.0078125f)) == 1.0078125f);  // 1 + 2^-7, the next value after 1
  // Every non-NaN bf16 value is a float that converts back to itself.
  int bad = 0;
  for (std::uint32_t b = 0; b < 0x10000u; ++b) {
    const float f = from_bits(b << 16);
    if (std::isnan(f)) continue;
    if (rne(f) != b) ++bad;
    if (to_float(to_bf16(f)) != f) ++bad;
  }
  CHECK(bad == 0);
}

TEST_CASE("bf16 conversion rounds to nearest, ties to even", "[bf16]") {
  // 1 + 2^-8 is halfway between 1 (0x3f80, even) and 1 + 2^-7 (0x3f81): goes to even.
  CHECK(rne(1.00390625f) == 0x3f80);
  // 1 + 3 * 2^-8 is halfway between 0x3f81 (odd) and 0x3f82: goes up to even.
  CHECK(rne(1.01171875f) == 0x3f82);
  // Just above a tie rounds up, just below rounds down.
  CHECK(rne(from_bits(0x3f808001u)) == 0x3f81);
  CHECK(rne(from_bits(0x3f807fffu)) == 0x3f80);
  CHECK(rne(-1.01171875f) == 0xbf82);
  // The check can fail: a truncating conversion gets the upward cases wrong.
  CHECK(truncated(1.01171875f) != 0x3f82);
  CHECK(truncated(from_bits(0x3f808001u)) != 0x3f81);
}

TEST_CASE("bf16 conversion keeps NaN and Inf, rounds past the largest finite to Inf", "[bf16]") {
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(rne(inf) == 0x7f80);
  CHECK(rne(-inf) == 0xff80);
  CHECK(std::isnan(to_float(to_bf16(std::numeric_limits<float>::quiet_NaN()))));
  // A NaN whose payload lies only in the dropped bits must not become Inf.
  CHECK(std::isnan(to_float(to_bf16(from_bits(0x7f800001u)))));
  CHECK(std::isnan(to_float(to_bf16(from_bits(0xff800001u)))));
  CHECK(std::signbit(to_float(to_bf16(from_bits(0xff800001u)))));
  // Largest finite bf16: (2 - 2^-7) * 2^127 = 0x7f7f.
  const float max_bf16 = from_bits(0x7f7f0000u);
  CHECK(rne(max_bf16) == 0x7f7f);
  CHECK(to_float(to_bf16(max_bf16)) == std::ldexp(255.0f, 120));
  CHECK(rne(from_bits(0x7f7f7fffu)) == 0x7f7f);  // below the tie: stays finite
  CHECK(rne(from_bits(0x7f7f8000u)) == 0x7f80);  // the tie with an odd max: Inf
  CHECK(rne(std::numeric_limits<float>::max()) == 0x7f80);
  CHECK(rne(-std::numeric_limits<float>::max()) == 0xff80);
}

TEST_CASE("bf16 conversion of denormals", "[bf16]") {
  // The smallest bf16 denormal is 2^-133 (0x0001).
  CHECK(bfloat16_to_float(BFloat16{0x0001}) == std::ldexp(1.0f, -133));
  CHECK(rne(std::ldexp(1.0f, -133)) == 0x0001);
  CHECK(rne(from_bits(0x00000001u)) == 0x0000);  // the smallest float denormal: to 0
  CHECK(rne(from_bits(0x00008000u)) == 0x0000);  // half of 2^-133: tie, to even 0
  CHECK(rne(from_bits(0x00018000u)) == 0x0002);  // 1.5 * 2^-133: tie, to even 2
  CHECK(rne(from_bits(0x00008001u)) == 0x0001);  // above the tie
  CHECK(rne(-std::ldexp(3.0f, -133)) == 0x8003);
  CHECK(rne(from_bits(0x007fffffu)) == 0x0080);  // the largest float denormal rounds to 2^-126
}

TEST_CASE("bf16 conversion in a kernel agrees with the host's", "[bf16]") {
  const std::vector<std::uint32_t> patterns = {0x3f800000u, 0x3f808000u, 0x3f818000u, 0x3f808001u, 0x00018000u,
                                               0x00000001u, 0x7f7f8000u, 0x7f7f7fffu, 0x7f800000u, 0xff800000u,
                                               0xc0490fdbu, 0x3eaaaaabu, 0x7f800001u, 0x007fffffu, 0x80000000u};
  const int n = int(patterns.size());
  Kokkos::View<float*, Kokkos::LayoutRight, MemSpace> in("in", n);
  Kokkos::View<bf16*, Kokkos::LayoutRight, MemSpace> out("out", n);
  Kokkos::View<float*, Kokkos::LayoutRight, MemSpace> back("back", n);
  auto hin = Kokkos::create_mirror_view(in);
  for (int i = 0; i < n; ++i) hin(i) = from_bits(patterns[std::size_t(i)]);
  Kokkos::deep_copy(in, hin);
  Kokkos::parallel_for(
      "test_bf16::convert", Range(0, n), KOKKOS_LAMBDA(const int i) {
        out(i) = to_bf16(in(i));
        back(i) = to_float(out(i));
      });
  auto hout = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), out);
  auto hback = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), back);
  for (int i = 0; i < n; ++i) {
    INFO("pattern " << std::hex << patterns[std::size_t(i)]);
    const float f = hin(i);
    if (std::isnan(f)) {
      CHECK(std::isnan(hback(i)));
    } else {
      CHECK(bits_of(hout(i)) == round_to_bfloat16(f).bits);  // the project's rounding is the reference
      CHECK(hback(i) == bfloat16_to_float(round_to_bfloat16(f)));
    }
  }
}
