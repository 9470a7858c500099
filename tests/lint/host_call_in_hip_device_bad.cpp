// SPDX-License-Identifier: BSD-3-Clause
// The lint's known-bad snippet for device code calling a host-only member function
// (scripts/lint-device.py rule 4), with the marks CUDA and HIP share (__global__,
// __device__, __host__ __device__) instead of Kokkos': nvcc only warns (#20011/#20014),
// hipcc refuses it ("reference to __host__ function in __host__ __device__ function"),
// and g++ never sees it. Not built with the project; every line marked LINT-EXPECT must
// be flagged, the others not.
struct Grid {
  int rows, cols;
  int cells() const { return rows * cols; }                          // host-only
  __host__ __device__ int row_of(int i) const { return i / cols; }   // device-callable
};

__global__ void fill(Grid g, float* out) {
  const int i = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < g.cells()) out[i] = float(g.row_of(i));  // LINT-EXPECT
}

__host__ __device__ inline int last_cell(const Grid& g) {
  return g.cells() - 1;  // LINT-EXPECT
}

__device__ int first_row(const Grid& g) { return g.row_of(0); }  // fine
inline int host_last_cell(const Grid& g) { return g.cells() - 1; }  // fine: host code
