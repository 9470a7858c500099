#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# Spack is not installed here, so this checks what can be checked without it:
#  * the recipe compiles as Python; its class body runs against spack_stub.py (a
#    stand-in for spack.package), which records the directives with loops and
#    f-strings expanded;
#  * its form against current Spack practice (recipe_form.py): c/cxx build
#    dependencies, self["kokkos"].kokkos_cxx (from the syntax tree), Kokkos versions
#    bounded to the tested 4.6 (kokkos-nvcc-wrapper with them), kokkos+cuda_lambda, one
#    cuda_arch, one amdgpu_target, not +cuda with +rocm, Release, hwloc with CUDA/NVML or
#    ROCm, the compiler Kokkos was built with (hipcc for ROCm), Cray MPICH's GTL for CUDA
#    and ROCm and one clear error where cray-mpich has none (cmake_args() run for CPU,
#    CUDA, ROCm and cray-mpich configurations), license, the numbered version's commit
#    and stand-alone tests;
#  * cross-checks with the project's CMake files: the recipe sets every option() the
#    project has and no other (a MINI5D_ cache variable may be set too), each
#    <Pkg>_ROOT names a find_package, each find_package or pkg-config module is a
#    dependency of the recipe and vice versa, and every variant is used;
#  * the environments spack/envs/<name>/spack.yaml (spack_envs.py).
# usage: check_spack.py REPO_ROOT
import ast
import os
import re
import sys

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import recipe_form  # noqa: E402
import spack_envs  # noqa: E402
import spack_stub  # noqa: E402

root = sys.argv[1]
errors = []


def err(msg):
    errors.append(msg)


def cmake_files():
    for d, dirs, files in os.walk(root):
        rel = os.path.relpath(d, root)
        # build trees and the downstream test project (it is not part of mini5d's build)
        dirs[:] = [x for x in dirs if not x.startswith(("build", ".")) and
                   os.path.join(rel, x) not in ("tests/install",)]
        for f in files:
            if f == "CMakeLists.txt" or f.endswith(".cmake"):
                yield os.path.join(d, f)


cmake_text = "\n".join(open(p).read() for p in cmake_files())
cmake_text = re.sub(r"#[^\n]*", "", cmake_text)  # comments out
options = set(re.findall(r"\boption\(\s*([A-Za-z0-9_]+)", cmake_text))
cache_vars = set(re.findall(r"\bset\(\s*(MINI5D_[A-Z0-9_]+)\s[^)]*\bCACHE\b", cmake_text))
project_version = re.search(r"\bproject\(\s*mini5d\s+VERSION\s+([0-9.]+)", cmake_text)
project_version = project_version.group(1) if project_version else "?"
packages = set(re.findall(r"\bfind_package\(\s*([A-Za-z0-9_-]+)", cmake_text))
pkgconfig = set(re.findall(r"pkg_check_modules\([^)]*IMPORTED_TARGET\s+([a-z0-9_-]+)", cmake_text))

# ---- the recipe -------------------------------------------------------------------
recipe_path = os.path.join(root, "spack", "packages", "mini5d", "package.py")
src = open(recipe_path).read()
try:
    compile(src, recipe_path, "exec")
except SyntaxError as e:
    sys.exit(f"FAIL: {recipe_path}:{e.lineno}: {e.msg}")
tree = ast.parse(src)
cls = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Mini5d"]
if not cls:
    sys.exit("FAIL: no class Mini5d in " + recipe_path)
cls = cls[0]
bases = {b.id for b in cls.bases if isinstance(b, ast.Name)}
if not {"CMakePackage", "CudaPackage", "ROCmPackage"} <= bases:
    err(f"Mini5d derives from {sorted(bases)}, expected CMakePackage, CudaPackage and ROCmPackage")


def text_of(node):
    """A string constant, or an f-string with each {expr} written as {}."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
    return None


def kwarg(call, name):
    for k in call.keywords:
        if k.arg == name:
            return k.value
    return None


try:
    recipe_cls, directives = spack_stub.load_recipe(recipe_path)
except Exception as e:  # what Spack would raise when it loads the recipe
    sys.exit(f"FAIL: {recipe_path}: the class body raises {type(e).__name__}: {e}")
variants = {"cuda", "cuda_arch"} | {"rocm", "amdgpu_target"}  # from CudaPackage and ROCmPackage
variants |= {a[0] for n, a, _ in directives if n == "variant" and a}
deps = [(a[0], k.get("when", ""), k.get("type", "")) for n, a, k in directives if n == "depends_on" and a]
defines = {}   # CMake name -> "define" | variant name, from the syntax tree (every branch)
for node in ast.walk(cls):
    if not isinstance(node, ast.Call):
        continue
    fn = node.func
    name = fn.id if isinstance(fn, ast.Name) else fn.attr if isinstance(fn, ast.Attribute) else None
    args = [text_of(a) for a in node.args]
    if name == "define" and args and args[0]:
        defines[args[0]] = "define"
    elif name == "define_from_variant" and len(args) >= 2 and args[0]:
        defines[args[0]] = args[1]

# ---- what the recipe must contain ----------------------------------------------------
def dep(pkg, must=(), when=None, typ=None):
    """A depends_on on `pkg` whose spec has every `must` fragment (and the when/type)."""
    for spec, w, t in deps:
        if re.match(rf"^{re.escape(pkg)}(?![A-Za-z0-9_-])", spec) and all(m in spec for m in must) \
                and (when is None or w == when) and (typ is None or t == typ):
            return True
    return False


for pkg, must, when, typ in [
        ("kokkos", ["+openmp"], "+openmp", None), ("kokkos-kernels", ["+openmp"], "+openmp", None),
        ("kokkos", ["+cuda", "+wrapper"], "+cuda", None), ("kokkos-kernels", ["+cuda", "+cublas"], "+cuda", None),
        *[(p, [f"cuda_arch={a}"], f"+cuda cuda_arch={a}", None) for a in spack_stub.CUDA_ARCH_VALUES
          for p in ("kokkos", "kokkos-kernels")],
        ("kokkos-nvcc-wrapper", [], "+cuda", None),
        ("kokkos", ["+rocm"], "+rocm", None), ("kokkos-kernels", ["+rocblas"], "+rocm", None),
        *[(p, [f"amdgpu_target={t}"], f"+rocm amdgpu_target={t}", None) for t in spack_stub.AMDGPU_TARGETS
          for p in ("kokkos", "hwloc")],
        ("kokkos-kernels", ["+blas"], None, None),
        ("mpi", [], None, None), ("hdf5", ["+mpi"], None, None), ("hwloc", [], None, None),
        ("yaml-cpp", [], None, None), ("blas", [], None, None), ("catch2", [], None, "test")]:
    if not dep(pkg, must, when, typ):
        err(f"recipe: no depends_on('{pkg}{''.join(m if m[0] == '+' else ' ' + m for m in must)}'" + (f", when='{when}'" if when else "") +
            (f", type='{typ}'" if typ else "") + ")")
if defines.get("MINI5D_NATIVE") != "define" or "self.define(\"MINI5D_NATIVE\", False)" not in src:
    err("recipe: must pass -DMINI5D_NATIVE=OFF (self.define(\"MINI5D_NATIVE\", False))")
if defines.get("CMAKE_CXX_COMPILER") != "define":
    err("recipe: CMAKE_CXX_COMPILER must be Kokkos' compiler (self['kokkos'].kokkos_cxx: nvcc_wrapper for +cuda; hipcc for +rocm)")
recipe_form.check(root, tree, cls, recipe_cls, directives, project_version, err)

# ---- cross-checks with CMake -------------------------------------------------------
project_defines = {n for n in defines if n.startswith("MINI5D_")}
for n in sorted(options - project_defines):
    err(f"CMake option {n} is not set by the recipe (set it, or decide its Spack value)")
for n in sorted(project_defines - options - cache_vars):
    err(f"recipe sets {n}, which no CMakeLists option() or set(... CACHE) defines")
for n in sorted(defines):
    if n.endswith("_ROOT") and n[:-5] not in packages:
        err(f"recipe sets {n}, but CMake has no find_package({n[:-5]})")
    elif not (n.startswith(("MINI5D_", "CMAKE_")) or n.endswith("_ROOT")):
        err(f"recipe sets {n}, which is neither a project option, a CMAKE_ variable nor a <Pkg>_ROOT")
spack_name = {"Kokkos": "kokkos", "KokkosKernels": "kokkos-kernels", "MPI": "mpi", "HDF5": "hdf5",
              "yaml-cpp": "yaml-cpp", "BLAS": "blas", "Catch2": "catch2", "PkgConfig": "pkgconfig",
              "Python3": "python", "Threads": None}
needed = set()
for p in sorted(packages | pkgconfig):
    if p in pkgconfig:
        needed.add(p)
    elif p not in spack_name:
        err(f"CMake finds {p}, which check_spack.py does not map to a Spack package (add it to spack_name)")
    elif spack_name[p]:
        needed.add(spack_name[p])
declared = {re.match(r"[A-Za-z0-9_-]+", s).group(0) for s, _, _ in deps}
always = {re.match(r"[A-Za-z0-9_-]+", s).group(0) for s, w, _ in deps if not w}
for p in sorted(needed - always):
    err(f"CMake needs {p}, the recipe does not depend on it (in every configuration)")
# kokkos-nvcc-wrapper: pinned beside kokkos (Spack's kokkos leaves its version free).
for p in sorted(declared - needed - {"cmake", "py-h5py", "c", "cxx", "kokkos-nvcc-wrapper"}):
    err(f"recipe depends on {p}, which no find_package/pkg_check_modules in CMake needs")
for v in sorted(variants - {"build_type"}):  # CMakePackage turns build_type into CMAKE_BUILD_TYPE
    used = v in defines.values() or any(re.search(rf"(^|[+ ~]){re.escape(v)}\b", w) for _, w, _ in deps)
    if not used:
        err(f"variant {v} changes nothing (no depends_on when=... and no define_from_variant)")
if "Kokkos_ENABLE_CUDA" not in cmake_text:
    err("CMake never looks at Kokkos_ENABLE_CUDA: the cuda variant would not reach the build")

# ---- the environments ----------------------------------------------------------------
spack_envs.check(root, variants, err)

if errors:
    for e in errors:
        print("FAIL: " + e)
    sys.exit(1)
print(f"ok: recipe compiles; variants {sorted(variants)}; CMake options {sorted(options)} all set; "
      f"dependencies match CMake's {sorted(needed)}; recipe form checked (CPU, CUDA, ROCm, cray-mpich+cuda/+rocm, "
      f"cray-mpich without a GTL); "
      f"environments {sorted(spack_envs.ENVS)} each pick one mini5d spec")
