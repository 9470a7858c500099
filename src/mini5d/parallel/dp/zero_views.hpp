// SPDX-License-Identifier: BSD-3-Clause
// Small helpers the ZeRO optimizer's files share: slices of flat buffers, and waiting
// for (or testing) the collectives of one unit, one per chunk, together.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "mini5d/comm/communicator.hpp"
#include "mini5d/kernels/views.hpp"

namespace mini5d::dp::detail {

inline VecU<float> slice(VecU<float> v, std::int64_t begin, std::int64_t size) {
  return Kokkos::subview(v, std::make_pair(begin, begin + size));
}

// Elements [begin, begin + size) of a managed flat buffer of any element type.
template <class T>
VecU<T> part_of(const Kokkos::View<T*, Kokkos::LayoutRight, MemSpace>& v, std::int64_t begin, std::int64_t size) {
  return VecU<T>(v.data() + begin, std::size_t(size));
}

inline void wait_all(std::vector<comm::Request>& reqs) {
  for (auto& r : reqs) r.wait();
  reqs.clear();
}
inline bool test_all(std::vector<comm::Request>& reqs) {
  bool done = true;
  for (auto& r : reqs) done = r.test() && done;
  return done;
}

}  // namespace mini5d::dp::detail
