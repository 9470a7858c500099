#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# check_spack.py must fail on each of these defects (each applied alone to a copy of
# the project's CMake files, recipe and spack.yaml), and pass on the unchanged copy.
# usage: check_spack_catches.py REPO_ROOT WORKDIR
import os
import shutil
import subprocess
import sys

root, work = sys.argv[1], sys.argv[2]
checker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check_spack.py")
RECIPE, ENV, TOP = "spack/packages/mini5d/package.py", "spack.yaml", "CMakeLists.txt"
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
    ("no CUDA environment", ENV, "== 'cuda'\n", "== 'gpu'\n"),
    ("two CPU specs", ENV, "== 'cuda80'", "!= 'cuda80'"),
    ("unknown variant in spack.yaml", ENV, "+openmp ~cuda", "+openmp ~cuda +fast"),
    ("no repo", ENV, "  repos:\n  - ./spack\n", ""),
]


def copy():
    shutil.rmtree(work, ignore_errors=True)
    for d, dirs, files in os.walk(root):
        rel = os.path.relpath(d, root)
        dirs[:] = [x for x in dirs if not x.startswith(("build", "."))]
        for f in files:
            if f in ("CMakeLists.txt", "package.py", "repo.yaml", "spack.yaml") or f.endswith(".cmake"):
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
    text = open(p).read()
    if old not in text:
        print(f"FAIL: mutation '{what}': '{old.strip()}' not found in {path}")
        bad += 1
        continue
    open(p, "w").write(text.replace(old, new, 1))
    r = run()
    first = (r.stdout + r.stderr).strip().splitlines()
    if r.returncode == 0:
        print(f"FAIL: check_spack.py passed with '{what}'")
        bad += 1
    else:
        print(f"caught {what}: {first[0] if first else '(no message)'}")
sys.exit(1 if bad else 0)
