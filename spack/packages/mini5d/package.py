# SPDX-License-Identifier: BSD-3-Clause
# Spack recipe for mini5d. Like other Kokkos applications, the Kokkos backend is chosen
# by variants that are forwarded to kokkos and kokkos-kernels (CUDA: nvcc_wrapper for
# Kokkos, cuBLAS behind KokkosBlas::gemm), and the C++ compiler is the one Kokkos was
# built with (spec["kokkos"].kokkos_cxx: nvcc_wrapper when +cuda). Every variant and
# CMake option here is cross-checked against the project's CMakeLists by
# tests/spack/check_spack.py (CTest spack_recipe).
from spack.package import *


class Mini5d(CMakePackage, CudaPackage):
    """GPT-style training mini-app in C++17, Kokkos and MPI with five parallelism axes
    (data with ZeRO, tensor with sequence parallelism, pipeline, context, expert), a
    layout planner (mini5d-plan) and sharded parallel-HDF5 checkpoints."""

    homepage = "https://github.com/mini5d/mini5d"
    git = "https://github.com/mini5d/mini5d.git"

    version("main", branch="main")

    # Kokkos host backend; the CUDA backend and cuda_arch come from CudaPackage.
    variant("openmp", default=True, description="Kokkos OpenMP backend on the host (else Serial)")
    variant("planner", default=True, description="Build the layout planner mini5d-plan")

    depends_on("cmake@3.20:", type="build")
    depends_on("pkgconfig", type="build")  # hwloc is found through pkg-config

    depends_on("kokkos@4:")
    depends_on("kokkos-kernels@4: +blas")
    depends_on("kokkos+openmp", when="+openmp")
    depends_on("kokkos-kernels+openmp", when="+openmp")
    depends_on("kokkos+cuda+wrapper", when="+cuda")
    depends_on("kokkos-kernels+cuda+cublas", when="+cuda")
    # The GPU architecture is fixed when Kokkos is built; mini5d inherits it.
    for arch in CudaPackage.cuda_arch_values:
        depends_on(f"kokkos cuda_arch={arch}", when=f"+cuda cuda_arch={arch}")
        depends_on(f"kokkos-kernels cuda_arch={arch}", when=f"+cuda cuda_arch={arch}")

    depends_on("mpi")
    depends_on("hdf5+mpi")
    depends_on("hwloc@2:")
    depends_on("yaml-cpp")
    depends_on("blas")
    depends_on("catch2@2", type="test")
    depends_on("python@3:", type="test")  # JSON and checkpoint checks in the tests
    depends_on("py-h5py", type="test")

    def cmake_args(self):
        spec = self.spec
        return [
            # Compiled by the compiler that built Kokkos: nvcc_wrapper for +cuda.
            self.define("CMAKE_CXX_COMPILER", spec["kokkos"].kokkos_cxx),
            self.define("Kokkos_ROOT", spec["kokkos"].prefix),
            self.define("KokkosKernels_ROOT", spec["kokkos-kernels"].prefix),
            # Spack sets the target flags itself; no -march=native.
            self.define("MINI5D_NATIVE", False),
            self.define("MINI5D_PLAN_ONLY", False),
            self.define_from_variant("MINI5D_BUILD_PLANNER", "planner"),
            self.define("MINI5D_BUILD_TESTS", self.run_tests),
            # Tests that need a running Slurm (scripts/start-slurm.sh) are not for Spack.
            self.define("MINI5D_SLURM_TESTS", False),
            # Nor those that need root to make the two-tier test cluster (scripts/start-cluster.sh).
            self.define("MINI5D_CLUSTER_TESTS", False),
            # Another compiler's warnings must not fail a site build.
            self.define("MINI5D_PEDANTIC_ERRORS", False),
        ]
