// SPDX-License-Identifier: BSD-3-Clause
// Views into [B*H, rows, x] tensors, one (batch, head) matrix per index, as attention
// (attention.hpp) and ring attention (online_softmax.hpp) keep them. Device callable:
// the batched products build their operands inside the kernel (batched_gemm.hpp).
#pragma once
#include "mini5d/kernels/views.hpp"

namespace mini5d::kernels {

// The whole (batch, head) matrix bh.
template <class V>
KOKKOS_INLINE_FUNCTION auto head_matrix(const V& v, int bh) {
  return Kokkos::subview(v, bh, Kokkos::ALL(), Kokkos::ALL());
}

// Rows [r0, r0 + n) of (batch, head) matrix bh (contiguous).
template <class S>
KOKKOS_INLINE_FUNCTION CMatU<S> head_rows(CTen3U<S> v, int bh, int r0, int n) {
  return Kokkos::subview(v, bh, Kokkos::make_pair(r0, r0 + n), Kokkos::ALL());
}
template <class S>
KOKKOS_INLINE_FUNCTION MatU<S> head_rows(Ten3U<S> v, int bh, int r0, int n) {
  return Kokkos::subview(v, bh, Kokkos::make_pair(r0, r0 + n), Kokkos::ALL());
}

// Query heads per key/value head of [B*H, ., .] queries against [B*Hkv, ., .] keys
// (grouped-query attention; 1 for multi-head): query matrix bh reads key/value matrix
// bh / group, as bh = b*H + h and H = group*Hkv.
template <class Q, class K>
int kv_group(const Q& q, const K& k) {
  return int(q.extent(0) / k.extent(0));
}

}  // namespace mini5d::kernels
