// SPDX-License-Identifier: BSD-3-Clause
// Element-wise conversion between storage types over a whole contiguous View (or a
// leading slice): fp32 <-> bf16 through bf16.hpp's one rounding rule (to nearest, ties
// to even), any other pair by a plain cast. Used where a bf16 model meets fp32 work:
// the attention core's widened copies, the working copy of the weights refreshed from
// the fp32 master after an update.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "mini5d/kernels/bf16.hpp"
#include "mini5d/kernels/profile.hpp"
#include "mini5d/kernels/views.hpp"

namespace mini5d::kernels {

template <class To, class From>
KOKKOS_INLINE_FUNCTION To convert_value(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<From, bf16>) {
    return To(to_float(v));
  } else if constexpr (std::is_same_v<To, bf16>) {
    return to_bf16(float(v));
  } else {
    return To(v);
  }
}

// dst(i) = src(i) converted, for the span of both (equal sizes, both contiguous).
template <class DstView, class SrcView>
void convert(const char* label, const DstView& dst, const SrcView& src) {
  using To = typename DstView::non_const_value_type;
  using From = typename SrcView::non_const_value_type;
  const std::int64_t n = std::int64_t(src.span());
  if (std::int64_t(dst.span()) != n) throw std::logic_error(std::string(label) + ": sizes differ");
  prof::Scope ps(prof::Family::convert, 0.0, double(sizeof(To) + sizeof(From)) * double(n));
  To* d = dst.data();
  const From* s = src.data();
  Kokkos::parallel_for(label, Range(0, n), KOKKOS_LAMBDA(const std::int64_t i) { d[i] = convert_value<To, From>(s[i]); });
}

}  // namespace mini5d::kernels
