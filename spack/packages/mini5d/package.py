# SPDX-License-Identifier: BSD-3-Clause
# Spack recipe for mini5d. Like other Kokkos applications, the Kokkos backend is chosen
# by variants that are forwarded to kokkos and kokkos-kernels (CUDA: nvcc_wrapper for
# Kokkos, cuBLAS behind KokkosBlas::gemm; ROCm: HIP, rocBLAS), and the C++ compiler is
# the one Kokkos was built with: self["kokkos"].kokkos_cxx (a property of the kokkos
# package: nvcc_wrapper for +cuda, else the build's own compiler), or hipcc for +rocm, as
# kokkos and kokkos-kernels do themselves. Every variant and CMake option here is
# cross-checked against the project's CMakeLists, and the recipe's form against current
# Spack practice, by tests/spack/check_spack.py (CTest spack_recipe);
# tests/spack/real_spack.sh (CTest spack_real) runs it through a real Spack when one is set up.
#
# Needs Spack >= 1.0 with its package repository spack-packages >= v2025.07 (the first
# release of that repository, with Kokkos 4.6): self["kokkos"] (a dependency's package),
# the c/cxx language dependencies, and kokkos@4.6 are not in Spack 0.x's builtin repo.
# Package API v1 (repo.yaml names no api:): Spack 1.x prepends spack-packages'
# build_systems._package_api_v1 to the recipe, which brings CMakePackage, CudaPackage
# and ROCmPackage; `from spack.package import *` brings the rest.
import os

from spack.package import *


class Mini5d(CMakePackage, CudaPackage, ROCmPackage):
    """GPT-style training mini-app in C++17, Kokkos and MPI with five parallelism axes
    (data with ZeRO, tensor with sequence parallelism, pipeline, context, expert), a
    layout planner (mini5d-plan) and sharded parallel-HDF5 checkpoints."""

    homepage = "https://github.com/mini5d/mini5d"
    git = "https://github.com/mini5d/mini5d.git"

    license("BSD-3-Clause")

    version("main", branch="main")
    # CMake's project(VERSION) and `mini5d version` say 0.1.0, and have since the first
    # commit (02362e1); the repository has no tags, so a tag= would name nothing (and
    # Spack warns about a tag without commit=). That first commit predates the options
    # and the test inputs this recipe uses, so 0.1.0 is pinned to the main commit this
    # recipe was written against instead: it has every option, input and test the
    # recipe names (tests/spack/check_spack.py looks), and a commit cannot move. A
    # release tag, when there is one, replaces it (tag= with its commit=).
    version("0.1.0", commit="4f46e830ff152dcaa40b44c3bf91d4e5928476b2")

    # Kokkos host backend; the device backends and their arch come from CudaPackage
    # (cuda, cuda_arch) and ROCmPackage (rocm, amdgpu_target).
    variant("openmp", default=True, description="Kokkos OpenMP backend on the host (else Serial)")
    variant("planner", default=True, description="Build the layout planner mini5d-plan")
    # Pinned rather than inherited: older Spack defaulted to RelWithDebInfo.
    variant(
        "build_type",
        default="Release",
        description="CMake build type",
        values=("Debug", "Release", "RelWithDebInfo", "MinSizeRel"),
    )

    # Spack >= 1.0 sets up a compiler only for the languages a recipe declares, and
    # CMakeLists.txt enables C and CXX.
    depends_on("c", type="build")
    depends_on("cxx", type="build")
    depends_on("cmake@3.20:", type="build")
    depends_on("pkgconfig", type="build")  # hwloc is found through pkg-config

    # Built and tested against Kokkos and Kokkos Kernels 4.6.01 (built from source: the
    # OpenMP, CUDA sm_90 and HIP builds). @4.6 takes any 4.6 patch release, so Spack picks
    # the newest one it knows (4.6.02 from spack-packages v2025.11 on, a bug-fix release
    # not built with mini5d here) and a site's installed 4.6.x is accepted; for exactly
    # the tested pair add ^kokkos@4.6.01 ^kokkos-kernels@4.6.01 to the spec. Kokkos 5
    # wants C++20 and drops 4.x's deprecated code; mini5d is C++17 and has not been built
    # against it, so @4.6 until it has.
    depends_on("kokkos@4.6")
    depends_on("kokkos-kernels@4.6 +blas")
    depends_on("kokkos+openmp", when="+openmp")
    depends_on("kokkos-kernels+openmp", when="+openmp")

    # CUDA: nvcc_wrapper, extended lambdas, cuBLAS, one cuda_arch.
    depends_on("kokkos+cuda+wrapper", when="+cuda")
    # kokkos depends on kokkos-nvcc-wrapper with no version (Spack's kokkos recipe ties
    # them only for @develop), so the concretizer would pick the newest wrapper (4.7.x,
    # 5.x) beside kokkos 4.6: the wrapper must match the Kokkos it compiles for.
    depends_on("kokkos-nvcc-wrapper@4.6", when="+cuda")
    # mini5d's kernels are device lambdas: Kokkos' CMake refuses them without it.
    depends_on("kokkos+cuda_lambda", when="+cuda")
    depends_on("kokkos-kernels+cuda+cublas", when="+cuda")
    # The GPU architecture is fixed when Kokkos is built; mini5d inherits it.
    for arch in CudaPackage.cuda_arch_values:
        depends_on(f"kokkos cuda_arch={arch}", when=f"+cuda cuda_arch={arch}")
        depends_on(f"kokkos-kernels cuda_arch={arch}", when=f"+cuda cuda_arch={arch}")
    # Kokkos compiles for exactly one architecture; CudaPackage's cuda_arch takes many.
    conflicts(
        "cuda_arch=none",
        when="+cuda",
        msg="mini5d +cuda needs one cuda_arch (e.g. cuda_arch=90 for H100/H200, 80 for A100)",
    )
    for i, first in enumerate(CudaPackage.cuda_arch_values):
        for second in CudaPackage.cuda_arch_values[i + 1 :]:
            conflicts(
                f"cuda_arch={first},{second}",
                when="+cuda",
                msg="mini5d +cuda takes a single cuda_arch: Kokkos builds for one GPU architecture",
            )

    # ROCm: Kokkos' HIP backend, rocBLAS, one amdgpu_target. kokkos-kernels has no rocm
    # variant (it takes its backend from kokkos); its rocBLAS TPL is +rocblas.
    depends_on("kokkos+rocm", when="+rocm")
    depends_on("kokkos-kernels+rocblas", when="+rocm")
    for target in ROCmPackage.amdgpu_targets:
        # Spack's kokkos declares amdgpu_target single-valued, and refuses the targets
        # Kokkos does not know (its conflicts name them).
        depends_on(f"kokkos amdgpu_target={target}", when=f"+rocm amdgpu_target={target}")
        # hwloc+rocm is a ROCmPackage too, so it needs a target of its own (as openmpi+rocm gives it).
        depends_on(f"hwloc amdgpu_target={target}", when=f"+rocm amdgpu_target={target}")
    conflicts(
        "amdgpu_target=none",
        when="+rocm",
        msg="mini5d +rocm needs one amdgpu_target (e.g. amdgpu_target=gfx90a for MI250X, gfx942 for MI300A/X)",
    )
    for i, first in enumerate(ROCmPackage.amdgpu_targets):
        for second in ROCmPackage.amdgpu_targets[i + 1 :]:
            conflicts(
                f"amdgpu_target={first},{second}",
                when="+rocm",
                msg="mini5d +rocm takes a single amdgpu_target: Kokkos builds for one GPU architecture",
            )
    conflicts("+cuda", when="+rocm", msg="mini5d builds one Kokkos device backend: +cuda or +rocm, not both")

    depends_on("mpi")
    depends_on("hdf5+mpi")
    depends_on("hwloc@2:")
    # Placement (mini5d topo, rank binding) sees GPUs as GPUs only through these.
    depends_on("hwloc+cuda+nvml", when="+cuda")
    depends_on("hwloc+rocm", when="+rocm")
    depends_on("yaml-cpp")
    depends_on("blas")
    depends_on("catch2@2", type="test")
    depends_on("python@3:", type="test")  # JSON and checkpoint checks in the tests
    depends_on("py-h5py", type="test")

    # `spack test run mini5d` builds tests/install/downstream against the installed
    # prefix, so it needs the compilers.
    test_requires_compiler = True
    test_inputs = ["inputs/tiny.yaml", "inputs/clusters/cpu-2core.yaml", "tests/install/downstream"]

    # What Spack's cray-mpich package (spack-packages v2025.07 to v2026.06) has a GTL for:
    # its gtl_lib raises InstallError for any other cuda_arch or amdgpu_target (none too).
    cray_mpich_gtl_archs = {
        "cuda": ("cuda_arch", "libmpi_gtl_cuda", ("70", "80", "90")),
        "rocm": ("amdgpu_target", "libmpi_gtl_hsa", ("gfx906", "gfx908", "gfx90a", "gfx940", "gfx942")),
    }

    def mpi_gtl_link(self):
        """Cray MPICH's GPU transport library (GTL) link items when the MPI is
        cray-mpich+cuda (libmpi_gtl_cuda) or cray-mpich+rocm (libmpi_gtl_hsa), else []:
        with MPICH_GPU_SUPPORT_ENABLED=1 its MPI_Init aborts unless the program links the
        GTL, which Spack's compilers do not add."""
        mpi = self.spec["mpi"]
        kinds = [k for k in ("cuda", "rocm") if mpi.name == "cray-mpich" and mpi.satisfies(f"+{k}")]
        if not kinds:
            return []
        try:
            gtl = self["cray-mpich"].gtl_lib  # {"ldflags": [-L.., -Wl,-rpath,..], "ldlibs": [-l..]}
        except InstallError as e:
            # The first kind is the one gtl_lib looks at first (cuda, then rocm).
            arch_variant, lib, known = self.cray_mpich_gtl_archs[kinds[0]]
            value = mpi.variants[arch_variant].value if arch_variant in mpi.variants else "none"
            arch = value if isinstance(value, str) else ",".join(sorted(value))
            raise InstallError(
                f"mini5d: no Cray MPICH GTL for cray-mpich +{kinds[0]} {arch_variant}={arch}: Spack's "
                f"cray-mpich finds {lib} only for {arch_variant} {', '.join(known)}, in "
                f"<cray-mpich prefix>/../../../gtl/lib. Declare the external cray-mpich with the "
                f"{arch_variant} from that list nearest your GPUs (one GTL serves every GPU of a "
                f"vendor) and check that the GTL is there; or declare it ~{kinds[0]}: mini5d then "
                f"links no GTL, and parallel.gpu_aware_mpi=auto stages MPI buffers through the host "
                f"(docs/building.md). cray-mpich said: {e}"
            ) from e
        return list(gtl.get("ldflags", [])) + list(gtl.get("ldlibs", []))

    def cxx_compiler(self):
        """The compiler Kokkos was built with: hipcc for kokkos+rocm (as Spack's kokkos and
        kokkos-kernels choose it, unless Kokkos itself was built with clang or rocmcc),
        else self["kokkos"].kokkos_cxx (nvcc_wrapper for +cuda, else this build's compiler)."""
        kokkos = self.spec["kokkos"]
        if kokkos.satisfies("+rocm") and not (kokkos.satisfies("%cxx=clang") or kokkos.satisfies("%cxx=rocmcc")):
            return join_path(self.spec["hip"].prefix.bin, "hipcc")
        return self["kokkos"].kokkos_cxx

    def cmake_args(self):
        spec = self.spec
        return [
            # Compiled by the compiler that built Kokkos: nvcc_wrapper for +cuda, hipcc for +rocm.
            self.define("CMAKE_CXX_COMPILER", self.cxx_compiler()),
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
            # Empty unless the MPI is cray-mpich+cuda or +rocm (cmake/Mini5dMpiGtl.cmake).
            self.define("MINI5D_MPI_GTL_LINK", self.mpi_gtl_link()),
        ]

    @run_after("install")
    def cache_test_inputs(self):
        """Keep the decks and the downstream project for `spack test run`."""
        cache_extra_test_sources(self, self.test_inputs)

    def cached(self, *parts):
        return join_path(self.test_suite.current_test_cache_dir, *parts)

    def test_version(self):
        """the installed mini5d runs and prints its version"""
        mini5d = which(self.prefix.bin.mini5d)
        out = mini5d("version", output=str.split, error=str.split)
        assert out.startswith("mini5d "), out
        if not self.spec.satisfies("@main"):
            assert f"mini5d {self.spec.version} " in out, out

    def test_train(self):
        """a few training steps of the tiny deck, and the deck check"""
        mini5d = which(self.prefix.bin.mini5d)
        deck = self.cached("inputs", "tiny.yaml")
        mini5d("check", deck)
        out = mini5d("train", deck, "train.steps=3", "output.log_every=1", "checkpoint.every=0",
                     "checkpoint.at_end=false", output=str.split, error=str.split)
        assert "step 3/3" in out, out

    def test_plan(self):
        """mini5d-plan finds a layout for the tiny deck on a two-core node"""
        if not self.spec.satisfies("+planner"):
            raise SkipTest("built without the planner")
        plan = which(self.prefix.bin.join("mini5d-plan"))
        plan("--model", self.cached("inputs", "tiny.yaml"),
             "--cluster", self.cached("inputs", "clusters", "cpu-2core.yaml"), "--global-batch", "16")

    def test_find_package(self):
        """a downstream CMake project finds the install with find_package(mini5d), builds and runs"""
        src = self.cached("tests", "install", "downstream")
        build = join_path(self.test_suite.current_test_cache_dir, "downstream-build")
        # The compiler mini5d was built with: nvcc_wrapper for +cuda, hipcc for +rocm, else
        # the one the test environment sets up (test_requires_compiler).
        gpu = self.spec.satisfies("+cuda") or self.spec.satisfies("+rocm")
        cxx = self.cxx_compiler() if gpu else os.environ.get("CXX", "c++")
        cmake = which(self.spec["cmake"].prefix.bin.cmake)
        cmake("-S", src, "-B", build, f"-DCMAKE_CXX_COMPILER={cxx}",
              self.define("CMAKE_PREFIX_PATH", [d.prefix for d in self.spec.traverse(deptype="link")]))
        cmake("--build", build)
        tool = which(join_path(build, "downstream"))
        out = tool(self.cached("inputs", "clusters", "cpu-2core.yaml"), self.cached("inputs", "tiny.yaml"),
                   output=str.split, error=str.split)
        assert out.startswith("downstream: "), out
