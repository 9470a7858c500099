// SPDX-License-Identifier: BSD-3-Clause
// The lint's known-bad snippet for atomics that are wrong or serialised on a GPU
// (scripts/lint-device.py rule 7): long double (no GPU layout: 64 bits on AMD, 80 on
// the x86 host; unsupported in CUDA device code), 16-bit floats (no portable native
// atomic: Kokkos falls back to its lock table), float atomics in fine-grained memory (an
// AMD hardware float atomic has no effect there) and CUDA/HIP atomic intrinsics. Atomics
// on int64 and double in device memory are native or an exact CAS loop on both vendors,
// and are fine. Not built with the project; every line marked LINT-EXPECT must be
// flagged, the others not.
#include <Kokkos_Core.hpp>
#include <cstdint>

void accumulate(int n, Kokkos::View<double*> sums, Kokkos::View<float*> partial, Kokkos::View<std::int64_t*> counts,
                Kokkos::View<long double*> wide, Kokkos::View<Kokkos::Experimental::bhalf_t*> grads,
                Kokkos::View<float*, Kokkos::HIPManagedSpace> managed) {
  Kokkos::parallel_for(
      "snippet", n, KOKKOS_LAMBDA(const int i) {
        Kokkos::atomic_add(&sums(i % 4), 1.0);                  // fine: double, device memory
        Kokkos::atomic_add(&partial(i % 4), 1.0f);              // fine: float, device memory
        Kokkos::atomic_max(&counts(0), std::int64_t(i));        // fine: 64-bit integer max
        Kokkos::atomic_fetch_add(&counts(1), std::int64_t(1));  // fine
        Kokkos::atomic_add(&wide(0), 1.0L);                     // LINT-EXPECT
        Kokkos::atomic_add(&grads(i % 4), grads(i));            // LINT-EXPECT
        Kokkos::atomic_add(&managed(0), 1.0f);                  // LINT-EXPECT
      });
  long double host_total = 0;  // fine: host code
  Kokkos::atomic_add(&host_total, 1.0L);
}

struct Histogram {
  Kokkos::View<int*, Kokkos::MemoryTraits<Kokkos::Atomic>> bins;           // fine
  Kokkos::View<double*, Kokkos::MemoryTraits<Kokkos::Atomic>> weights;     // fine
  Kokkos::View<float*, Kokkos::SharedSpace, Kokkos::MemoryTraits<Kokkos::Atomic>> shared;  // LINT-EXPECT
  Kokkos::View<Kokkos::Experimental::half_t*, Kokkos::MemoryTraits<Kokkos::Atomic>> h;     // LINT-EXPECT
  KOKKOS_INLINE_FUNCTION void operator()(const int i) const {
    bins(i % 8) += 1;
    weights(i % 8) += 0.5;
  }
};

__global__ void raw(float* out, const float* in, int n) {
  const int i = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) atomicAdd(&out[i % 8], in[i]);  // LINT-EXPECT
  if (i < n) unsafeAtomicAdd(&out[0], in[i]);  // LINT-EXPECT
}
