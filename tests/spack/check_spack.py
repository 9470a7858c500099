#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# Spack is not installed here, so this checks what can be checked without it:
#  * spack.yaml parses; its package repository and develop path exist; every
#    MINI5D_SPACK choice (cpu, cuda, cuda80) selects exactly one mini5d spec, with the
#    right backend, and only variants the recipe has;
#  * the recipe compiles as Python and, read through its syntax tree, declares the
#    variants, dependencies and CMake definitions a mini5d build needs;
#  * cross-checks with the project's CMake files: the recipe sets every option() the
#    project has and no other, each <Pkg>_ROOT names a find_package, each find_package
#    or pkg-config module is a dependency of the recipe and vice versa, and every
#    variant is used (forwarded to kokkos/kokkos-kernels or to a CMake option).
# usage: check_spack.py REPO_ROOT
import ast
import os
import re
import sys

import yaml

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
if not {"CMakePackage", "CudaPackage"} <= bases:
    err(f"Mini5d derives from {sorted(bases)}, expected CMakePackage and CudaPackage")


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


variants = {"cuda", "cuda_arch"}  # from CudaPackage
deps = []      # (spec text, when text or "", type text or "")
defines = {}   # CMake name -> "define" | variant name
for node in ast.walk(cls):
    if not isinstance(node, ast.Call):
        continue
    fn = node.func
    name = fn.id if isinstance(fn, ast.Name) else fn.attr if isinstance(fn, ast.Attribute) else None
    args = [text_of(a) for a in node.args]
    if name == "variant" and args and args[0]:
        variants.add(args[0])
    elif name == "depends_on" and args and args[0]:
        when = kwarg(node, "when")
        typ = kwarg(node, "type")
        deps.append((args[0], text_of(when) if when is not None else "", text_of(typ) if typ is not None else ""))
    elif name == "define" and args and args[0]:
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
        ("kokkos", ["cuda_arch={}"], "+cuda cuda_arch={}", None),
        ("kokkos-kernels", ["cuda_arch={}"], "+cuda cuda_arch={}", None),
        ("kokkos-kernels", ["+blas"], None, None),
        ("mpi", [], None, None), ("hdf5", ["+mpi"], None, None), ("hwloc", [], None, None),
        ("yaml-cpp", [], None, None), ("blas", [], None, None), ("catch2", [], None, "test")]:
    if not dep(pkg, must, when, typ):
        err(f"recipe: no depends_on('{pkg}{''.join(m if m[0] == '+' else ' ' + m for m in must)}'" + (f", when='{when}'" if when else "") +
            (f", type='{typ}'" if typ else "") + ")")
if defines.get("MINI5D_NATIVE") != "define" or "self.define(\"MINI5D_NATIVE\", False)" not in src:
    err("recipe: must pass -DMINI5D_NATIVE=OFF (self.define(\"MINI5D_NATIVE\", False))")
if "kokkos_cxx" not in src or defines.get("CMAKE_CXX_COMPILER") != "define":
    err("recipe: CMAKE_CXX_COMPILER must be Kokkos' compiler (spec['kokkos'].kokkos_cxx: nvcc_wrapper for +cuda)")

# ---- cross-checks with CMake -------------------------------------------------------
project_defines = {n for n in defines if n.startswith("MINI5D_")}
for n in sorted(options - project_defines):
    err(f"CMake option {n} is not set by the recipe (set it, or decide its Spack value)")
for n in sorted(project_defines - options):
    err(f"recipe sets {n}, which no CMakeLists option() defines")
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
for p in sorted(needed - declared):
    err(f"CMake needs {p}, the recipe does not depend on it")
for p in sorted(declared - needed - {"cmake", "py-h5py"}):
    err(f"recipe depends on {p}, which no find_package/pkg_check_modules in CMake needs")
for v in sorted(variants):
    used = v in defines.values() or any(re.search(rf"(^|[+ ~]){re.escape(v)}\b", w) for _, w, _ in deps)
    if not used:
        err(f"variant {v} changes nothing (no depends_on when=... and no define_from_variant)")
if "Kokkos_ENABLE_CUDA" not in cmake_text:
    err("CMake never looks at Kokkos_ENABLE_CUDA: the cuda variant would not reach the build")

# ---- spack.yaml --------------------------------------------------------------------
env_path = os.path.join(root, "spack.yaml")
env = yaml.safe_load(open(env_path))["spack"]
for r in env.get("repos", []):
    rp = os.path.join(root, r)
    if not os.path.isfile(os.path.join(rp, "repo.yaml")):
        err(f"spack.yaml: repos: {r} has no repo.yaml")
    elif yaml.safe_load(open(os.path.join(rp, "repo.yaml")))["repo"]["namespace"] != "mini5d":
        err(f"spack.yaml: repos: {r}: namespace is not mini5d")
    if not os.path.isfile(os.path.join(rp, "packages", "mini5d", "package.py")):
        err(f"spack.yaml: repos: {r} holds no packages/mini5d/package.py")
if not env.get("repos"):
    err("spack.yaml: no repos: the repo's own recipe is not used")
dev = env.get("develop", {}).get("mini5d", {})
if not os.path.isfile(os.path.join(root, dev.get("path", "/nonexistent"), "CMakeLists.txt")):
    err("spack.yaml: develop: mini5d: path is not this checkout")
if "$mini5d" not in env.get("specs", []):
    err("spack.yaml: specs does not include $mini5d")
for choice, backend in [(None, "cpu"), ("cpu", "cpu"), ("cuda", "cuda"), ("cuda80", "cuda")]:
    envvars = {} if choice is None else {"MINI5D_SPACK": choice}
    chosen = []
    for d in env.get("definitions", []):
        if "mini5d" in d and eval(d.get("when", "True"), {"__builtins__": {}}, {"env": envvars}):
            chosen += d["mini5d"]
    if len(chosen) != 1:
        err(f"spack.yaml: MINI5D_SPACK={choice}: {len(chosen)} mini5d specs, expected 1")
        continue
    spec = chosen[0]
    if not spec.startswith("mini5d@main"):
        err(f"spack.yaml: '{spec}' is not mini5d@main (the develop spec)")
    for v in re.findall(r"[+~]([a-z_]+)|\b([a-z_]+)=", spec):
        name = v[0] or v[1]
        if name not in variants:
            err(f"spack.yaml: '{spec}': the recipe has no variant {name}")
    if backend == "cpu" and ("+cuda" in spec or "~cuda" not in spec):
        err(f"spack.yaml: the CPU environment's spec '{spec}' must say ~cuda")
    if backend == "cuda" and not ("+cuda" in spec and re.search(r"cuda_arch=\d+", spec)):
        err(f"spack.yaml: the CUDA environment's spec '{spec}' needs +cuda and cuda_arch")

if errors:
    for e in errors:
        print("FAIL: " + e)
    sys.exit(1)
print(f"ok: recipe compiles; variants {sorted(variants)}; CMake options {sorted(options)} all set; "
      f"dependencies match CMake's {sorted(needed)}; spack.yaml: cpu, cuda, cuda80 each pick one mini5d spec")
