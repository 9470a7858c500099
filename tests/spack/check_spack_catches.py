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
CPU, CUDA, SM80 = (f"spack/envs/{e}/spack.yaml" for e in ("cpu", "cuda", "cuda-sm80"))
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
    ("spec['kokkos'].kokkos_cxx", RECIPE, 'self.define("CMAKE_CXX_COMPILER", self["kokkos"].kokkos_cxx)',
     'self.define("CMAKE_CXX_COMPILER", spec["kokkos"].kokkos_cxx)'),
    ("kokkos_cxx of another package", RECIPE, 'self.define("CMAKE_CXX_COMPILER", self["kokkos"].kokkos_cxx)',
     'self.define("CMAKE_CXX_COMPILER", self["kokkos-kernels"].kokkos_cxx)'),
    # 3. versions and lambdas
    ("kokkos@4: unbounded", RECIPE, 'depends_on("kokkos@4.6")', 'depends_on("kokkos@4:")'),
    ("kokkos-kernels@4: unbounded", RECIPE, 'depends_on("kokkos-kernels@4.6 +blas")', 'depends_on("kokkos-kernels@4: +blas")'),
    ("kokkos without a version", RECIPE, 'depends_on("kokkos@4.6")', 'depends_on("kokkos")'),
    ("kokkos bounded away from the tested 4.6.01", RECIPE, 'depends_on("kokkos@4.6")', 'depends_on("kokkos@4.5")'),
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
    # 6. Cray MPICH GTL
    ("GTL never passed", RECIPE, 'self.define("MINI5D_MPI_GTL_LINK", self.mpi_gtl_link())', 'self.define("MINI5D_MPI_GTL_LINK", [])'),
    ("GTL looked up under a wrong name", RECIPE, 'mpi.name != "cray-mpich"', 'mpi.name != "cray_mpich"'),
    ("GTL for every MPI", RECIPE, 'if mpi.name != "cray-mpich" or not mpi.satisfies("+cuda"):', 'if not mpi.satisfies("+cuda"):'),
    ("GTL variable unknown to CMake", "cmake/Mini5dMpiGtl.cmake", "set(MINI5D_MPI_GTL_LINK", "set(MINI5D_GTL_LINK"),
    # 7. license, versions, stand-alone tests
    ("no license", RECIPE, '    license("BSD-3-Clause")\n', ""),
    ("no numbered version", RECIPE, '    version("0.1.0", tag="v0.1.0")\n', ""),
    ("a version from the wrong tag", RECIPE, 'version("0.1.0", tag="v0.1.0")', 'version("0.1.0", tag="v0.1")'),
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
