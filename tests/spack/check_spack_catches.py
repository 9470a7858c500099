#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# check_spack.py must fail on each of these defects (each applied alone to a copy of
# the project's CMake files, recipe and environments), and pass on the unchanged copy.
# usage: check_spack_catches.py REPO_ROOT WORKDIR
import os
import shutil
import subprocess
import sys

root, work = sys.argv[1], sys.argv[2]
checker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check_spack.py")
RECIPE, TOP = "spack/packages/mini5d/package.py", "CMakeLists.txt"
CPU, CUDA, SM80, MI250, MI300 = (f"spack/envs/{e}/spack.yaml" for e in
                                  ("cpu", "cuda", "cuda-sm80", "rocm-gfx90a", "rocm-gfx942"))
FIRST_COMMIT = "02362e1f820803e2cd3810df74ceaee7655dc581"  # set VERSION 0.1.0; predates the test inputs
# (what, file, old text, new text); old None: the file is created with the new text.
mutations = [
    ("hdf5 without +mpi", RECIPE, 'depends_on("hdf5+mpi")', 'depends_on("hdf5")'),
    ("native left on", RECIPE, 'self.define("MINI5D_NATIVE", False)', 'self.define("MINI5D_NATIVE", True)'),
    ("an option not set", RECIPE, '            self.define("MINI5D_SLURM_TESTS", False),\n', ""),
    ("a new CMake option", TOP, "option(MINI5D_NATIVE", "option(MINI5D_NEW_THING \"x\" ON)\noption(MINI5D_NATIVE"),
    ("a misspelt option", RECIPE, '"MINI5D_PLAN_ONLY"', '"MINI5D_PLANONLY"'),
    ("cuda_arch not forwarded", RECIPE, 'depends_on(f"kokkos cuda_arch={arch}"', 'depends_on(f"kokkos"'),
    ("no cuBLAS", RECIPE, "kokkos-kernels+cuda+cublas", "kokkos-kernels+cuda"),
    ("catch2 not test-only", RECIPE, 'depends_on("catch2@2", type="test")', 'depends_on("catch2@2")'),
    ("a new dependency in CMake", TOP, "find_package(Threads REQUIRED)", "find_package(Threads REQUIRED)\nfind_package(ZLIB REQUIRED)"),
    ("a dropped dependency", RECIPE, '    depends_on("hwloc@2:")\n', ""),
    ("an unused variant", RECIPE, 'variant("planner"', 'variant("unused", default=False, description="x")\n    variant("planner"'),
    ("a syntax error", RECIPE, "def cmake_args(self):", "def cmake_args(self)"),
    # 1. languages
    ("no C compiler declared", RECIPE, '    depends_on("c", type="build")\n', ""),
    ("cxx not a build dependency", RECIPE, 'depends_on("cxx", type="build")', 'depends_on("cxx")'),
    # 2. kokkos_cxx through the Spec (AttributeError on current Spack)
    ("spec['kokkos'].kokkos_cxx", RECIPE, 'return self["kokkos"].kokkos_cxx', 'return kokkos.kokkos_cxx'),
    ("kokkos_cxx of another package", RECIPE, 'return self["kokkos"].kokkos_cxx', 'return self["kokkos-kernels"].kokkos_cxx'),
    ("CMAKE_CXX_COMPILER not Kokkos' compiler", RECIPE, 'self.define("CMAKE_CXX_COMPILER", self.cxx_compiler())',
     'self.define("CMAKE_CXX_COMPILER", "c++")'),
    # 3. versions and lambdas
    ("kokkos@4: unbounded", RECIPE, 'depends_on("kokkos@4.6")', 'depends_on("kokkos@4:")'),
    ("kokkos-kernels@4: unbounded", RECIPE, 'depends_on("kokkos-kernels@4.6 +blas")', 'depends_on("kokkos-kernels@4: +blas")'),
    ("kokkos without a version", RECIPE, 'depends_on("kokkos@4.6")', 'depends_on("kokkos")'),
    ("kokkos bounded away from the tested 4.6.01", RECIPE, 'depends_on("kokkos@4.6")', 'depends_on("kokkos@4.5")'),
    ("kokkos-nvcc-wrapper unpinned", RECIPE, 'depends_on("kokkos-nvcc-wrapper@4.6", when="+cuda")',
     'depends_on("kokkos-nvcc-wrapper", when="+cuda")'),
    ("kokkos-nvcc-wrapper of another Kokkos", RECIPE, 'depends_on("kokkos-nvcc-wrapper@4.6"', 'depends_on("kokkos-nvcc-wrapper@4.7"'),
    ("no cuda_lambda", RECIPE, '    depends_on("kokkos+cuda_lambda", when="+cuda")\n', ""),
    # 4. cuda_arch, build type, hwloc
    ("cuda_arch=none allowed", RECIPE, '"cuda_arch=none",', '"cuda_arch=10",'),
    ("cuda_arch=none refused without a msg", RECIPE,
     'msg="mini5d +cuda needs one cuda_arch (e.g. cuda_arch=90 for H100/H200, 80 for A100)",', ""),
    ("adjacent cuda_arch pairs allowed", RECIPE, "cuda_arch_values[i + 1 :]", "cuda_arch_values[i + 2 :]"),
    ("two cuda_arch refused without a msg", RECIPE,
     'msg="mini5d +cuda takes a single cuda_arch: Kokkos builds for one GPU architecture",', ""),
    ("RelWithDebInfo by default", RECIPE, 'default="Release",', 'default="RelWithDebInfo",'),
    ("hwloc without NVML", RECIPE, 'depends_on("hwloc+cuda+nvml", when="+cuda")', 'depends_on("hwloc+cuda", when="+cuda")'),
    # ROCm
    ("no ROCmPackage", RECIPE, "class Mini5d(CMakePackage, CudaPackage, ROCmPackage):", "class Mini5d(CMakePackage, CudaPackage):"),
    ("kokkos without HIP", RECIPE, 'depends_on("kokkos+rocm", when="+rocm")', 'depends_on("kokkos", when="+rocm")'),
    ("no rocBLAS", RECIPE, 'depends_on("kokkos-kernels+rocblas", when="+rocm")', 'depends_on("kokkos-kernels", when="+rocm")'),
    ("amdgpu_target not forwarded", RECIPE, 'depends_on(f"kokkos amdgpu_target={target}"', 'depends_on(f"kokkos"'),
    ("hwloc without an amdgpu_target", RECIPE, 'depends_on(f"hwloc amdgpu_target={target}"', 'depends_on(f"hwloc"'),
    ("hwloc without ROCm", RECIPE, 'depends_on("hwloc+rocm", when="+rocm")', 'depends_on("hwloc", when="+rocm")'),
    ("amdgpu_target=none allowed", RECIPE, '"amdgpu_target=none",', '"amdgpu_target=gfx701",'),
    ("adjacent amdgpu_target pairs allowed", RECIPE, "amdgpu_targets[i + 1 :]", "amdgpu_targets[i + 2 :]"),
    ("+cuda with +rocm allowed", RECIPE, 'conflicts("+cuda", when="+rocm"', 'conflicts("+cuda", when="+rocm+cuda"'),
    ("kokkos_cxx for ROCm (g++, not hipcc)", RECIPE, 'if kokkos.satisfies("+rocm") and not', 'if kokkos.satisfies("+hip") and not'),
    ("hipcc though Kokkos was built with clang", RECIPE, 'not (kokkos.satisfies("%cxx=clang") or', 'not (kokkos.satisfies("%cxx=gcc-never") or'),
    # 6. Cray MPICH GTL
    ("GTL never passed", RECIPE, 'self.define("MINI5D_MPI_GTL_LINK", self.mpi_gtl_link())', 'self.define("MINI5D_MPI_GTL_LINK", [])'),
    ("GTL looked up under a wrong name", RECIPE, 'mpi.name == "cray-mpich"', 'mpi.name == "cray_mpich"'),
    ("GTL for every MPI", RECIPE, 'if mpi.name == "cray-mpich" and mpi.satisfies', 'if mpi.satisfies'),
    ("GTL for CUDA only", RECIPE, 'for k in ("cuda", "rocm") if mpi.name', 'for k in ("cuda",) if mpi.name'),
    ("cray-mpich's InstallError not caught", RECIPE, "except InstallError as e:", "except KeyError as e:"),
    ("GTL error without the arch", RECIPE, "+{kinds[0]} {arch_variant}={arch}:", "+{kinds[0]}:"),
    ("GTL error without the known archs", RECIPE, "only for {arch_variant} {', '.join(known)}", "only for some {arch_variant}"),
    ("GTL variable unknown to CMake", "cmake/Mini5dMpiGtl.cmake", "set(MINI5D_MPI_GTL_LINK", "set(MINI5D_GTL_LINK"),
    # 7. license, versions, stand-alone tests
    ("no license", RECIPE, '    license("BSD-3-Clause")\n', ""),
    ("no numbered version", RECIPE, '    version("0.1.0", commit=', '    version("0.2.0", commit='),
    ("a version from a tag the repository lacks", RECIPE, 'version("0.1.0", commit=', 'version("0.1.0", tag="v0.1.0", c='),
    ("a version at a commit not in the repository", RECIPE, 'version("0.1.0", commit="4f46e83', 'version("0.1.0", commit="0f46e83'),
    ("a version at a commit without the test inputs", RECIPE, 'commit="4f46e830ff152dcaa40b44c3bf91d4e5928476b2"',
     f'commit="{FIRST_COMMIT}"'),
    ("no version test", RECIPE, "def test_version(self):", "def check_version(self):"),
    ("no training test", RECIPE, "def test_train(self):", "def check_train(self):"),
    ("a test without docstring", RECIPE, '        """mini5d-plan finds a layout for the tiny deck on a two-core node"""\n', ""),
    ("a test input not in the checkout", RECIPE, '"inputs/tiny.yaml", "inputs/clusters', '"inputs/tiny2.yaml", "inputs/clusters'),
    # 5. environments
    ("a shared top-level environment", "spack.yaml", None, "spack:\n  specs: [mini5d]\n"),
    ("no sm_80 environment", SM80, "spack:", "not_spack:"),
    ("CPU environment with CUDA", CPU, "+openmp ~cuda", "+openmp +cuda"),
    ("two mini5d specs", CPU, "  - openblas threads=openmp", "  - mini5d@main +openmp ~cuda"),
    ("unknown variant in an environment", CPU, "+openmp ~cuda", "+openmp ~cuda +fast"),
    ("no repo", CPU, "  repos:\n  - ../..                    # spack/: repo.yaml, namespace mini5d\n", ""),
    ("repo path wrong", CUDA, "  - ../..  ", "  - ..  "),
    ("develop path not the checkout", CPU, "path: ../../..", "path: ../.."),
    ("CUDA environment without cuda_arch", CUDA, "+cuda cuda_arch=90", "+cuda"),
    ("sm_80 environment builds sm_90", SM80, "+cuda cuda_arch=80", "+cuda cuda_arch=90"),
    ("CUDA environment does not constrain MPI", CUDA, '      - one_of: ["openmpi +cuda", "mpich +cuda", "cray-mpich +cuda"]\n', ""),
    ("CUDA environment admits a non-CUDA MPI", SM80, '"openmpi +cuda", "mpich +cuda"', '"openmpi", "mpich +cuda"'),
    ("CPU environment with ROCm", CPU, "+openmp ~cuda", "+openmp ~cuda +rocm amdgpu_target=gfx90a"),
    ("no gfx942 environment", MI300, "spack:", "not_spack:"),
    ("ROCm environment without amdgpu_target", MI250, "+rocm amdgpu_target=gfx90a\n", "+rocm\n"),
    ("gfx942 environment builds gfx90a", MI300, "+rocm amdgpu_target=gfx942\n", "+rocm amdgpu_target=gfx90a\n"),
    ("ROCm environment does not constrain MPI", MI250, "    mpi:\n      require:\n", "    mpi_unused:\n      require:\n"),
    ("ROCm environment admits a non-ROCm MPI", MI300, '"mpich +rocm amdgpu_target=gfx942"', '"mpich amdgpu_target=gfx942"'),
    ("ROCm environment admits a CUDA MPI", MI250, '"openmpi +rocm amdgpu_target=gfx90a"', '"openmpi +cuda"'),
    ("ROCm environment admits an MPI without ROCm support", MI250, '"openmpi +rocm', '"mvapich2 +rocm'),
    ("ROCm environment's MPI for another GPU", MI300, '"cray-mpich +rocm amdgpu_target=gfx942"', '"cray-mpich +rocm amdgpu_target=gfx90a"'),
]


def copy():
    shutil.rmtree(work, ignore_errors=True)
    for d, dirs, files in os.walk(root):
        rel = os.path.relpath(d, root)
        dirs[:] = [x for x in dirs if not x.startswith(("build", "."))]
        for f in files:
            # what check_spack.py reads, and the files the recipe's stand-alone tests use
            if f in ("CMakeLists.txt", "package.py", "repo.yaml", "spack.yaml") or f.endswith(".cmake") or \
                    rel.split(os.sep)[0] == "inputs" or rel.startswith(os.path.join("tests", "install")):
                os.makedirs(os.path.join(work, rel), exist_ok=True)
                shutil.copy(os.path.join(d, f), os.path.join(work, rel, f))


def run():
    return subprocess.run([sys.executable, checker, work], capture_output=True, text=True)


copy()
r = run()
if r.returncode != 0:
    sys.exit("FAIL: the unchanged copy does not pass:\n" + r.stdout + r.stderr)
bad = 0
for what, path, old, new in mutations:
    copy()
    p = os.path.join(work, path)
    text = "" if old is None else open(p).read()
    if old is None:
        open(p, "w").write(new)
    elif old not in text:
        print(f"FAIL: mutation '{what}': '{old.strip()}' not found in {path}")
        bad += 1
        continue
    else:
        open(p, "w").write(text.replace(old, new, 1))
    r = run()
    first = (r.stdout + r.stderr).strip().splitlines()
    if r.returncode == 0:
        print(f"FAIL: check_spack.py passed with '{what}'")
        bad += 1
    else:
        print(f"caught {what}: {first[0] if first else '(no message)'}")
sys.exit(1 if bad else 0)
