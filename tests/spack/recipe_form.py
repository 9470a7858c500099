# SPDX-License-Identifier: BSD-3-Clause
"""Checks of the recipe's form against current Spack practice, on the directives the
class body records (spack_stub runs it, loops and f-strings expanded), its syntax tree
and cmake_args() run for a CPU, a CUDA and a Cray MPICH + CUDA configuration. Each
check says which Spack behaviour it guards; check_spack.py calls check(...)."""
import ast
import os
import re

import spack_stub

TESTED_KOKKOS = "4.6.01"  # Kokkos and Kokkos Kernels mini5d was built and tested against


def version_bounded(constraint):
    """A Spack version constraint with an upper bound ('4.6', '4.6.00:4.6', not '4:')."""
    return bool(constraint) and not constraint.endswith(":") and "," not in constraint


def version_contains(constraint, version):
    """Spack's reading of '@A', '@A:B', '@A:', '@:B' (B matches its own extensions)."""
    def key(v):
        return [int(x) if x.isdigit() else x for x in re.split(r"[.]", v)]

    def at_most(v, hi):
        return key(v)[:len(key(hi))] <= key(hi)

    if ":" not in constraint:
        return version == constraint or version.startswith(constraint + ".")
    lo, hi = constraint.split(":", 1)
    return (not lo or key(version) >= key(lo)) and (not hi or at_most(version, hi))


def kokkos_cxx_uses(tree):
    """Every X.kokkos_cxx in the recipe, as (line, form): 'self[kokkos]' is the package
    property; anything else (spec["kokkos"].kokkos_cxx) fails on current Spack."""
    uses = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "kokkos_cxx":
            v = node.value
            ok = (isinstance(v, ast.Subscript) and isinstance(v.value, ast.Name) and v.value.id == "self"
                  and isinstance(v.slice, ast.Constant) and v.slice.value == "kokkos")
            uses.append((node.lineno, "self[kokkos]" if ok else ast.unparse(node)))
    return uses


def method_calls_with(cls, prefix, word):
    """Names of methods starting with `prefix` that pass the string `word` to a call."""
    names = []
    for fn in cls.body:
        if isinstance(fn, ast.FunctionDef) and fn.name.startswith(prefix):
            for node in ast.walk(fn):
                if isinstance(node, ast.Call) and any(isinstance(a, ast.Constant) and a.value == word for a in node.args):
                    names.append(fn.name)
                    break
    return names


def check(root, tree, cls_node, recipe_cls, directives, project_version, err):
    calls = lambda name: [(a, k) for n, a, k in directives if n == name]  # noqa: E731
    deps = [(a[0], k.get("when", ""), k.get("type", "")) for a, k in calls("depends_on")]
    conflicts = [(a[0], k.get("when", ""), k.get("msg", "")) for a, k in calls("conflicts")]

    # 1. Spack >= 1.0 gives a build a compiler only for the languages it declares.
    for lang in ("c", "cxx"):
        if (lang, "", "build") not in deps:
            err(f'recipe: no depends_on("{lang}", type="build"): Spack >= 1.0 sets up no {lang} compiler, '
                "and CMakeLists.txt enables C and CXX")

    # 2. kokkos_cxx is a property of the kokkos package, not of its Spec.
    uses = kokkos_cxx_uses(tree)
    if not uses:
        err('recipe: CMAKE_CXX_COMPILER is not Kokkos\' compiler (self["kokkos"].kokkos_cxx)')
    for line, form in uses:
        if form != "self[kokkos]":
            err(f'recipe:{line}: {form}: kokkos_cxx is a property of the kokkos package; write '
                'self["kokkos"].kokkos_cxx (a Spec has no such attribute on current Spack)')

    # 3. Versions bounded to what was tested; extended lambdas for CUDA.
    for pkg in ("kokkos", "kokkos-kernels"):
        ranges = [spack_stub.parse(s)["version"] for s, w, _ in deps if not w and spack_stub.parse(s)["name"] == pkg]
        ranges = [r for r in ranges if r]
        if not ranges:
            err(f"recipe: depends_on('{pkg}') has no version: it would resolve to the newest (5.x, C++20)")
        for r in ranges:
            if not version_bounded(r):
                err(f"recipe: depends_on('{pkg}@{r}') is unbounded: Kokkos 5 (C++20) would satisfy it, "
                    f"mini5d is tested with {TESTED_KOKKOS}")
            elif not version_contains(r, TESTED_KOKKOS):
                err(f"recipe: depends_on('{pkg}@{r}') excludes {TESTED_KOKKOS}, the tested version")
    if not any(spack_stub.parse(s)["name"] == "kokkos" and "cuda_lambda" in spack_stub.parse(s)["on"]
               and w == "+cuda" for s, w, _ in deps):
        err("recipe: no depends_on('kokkos+cuda_lambda', when='+cuda'): Kokkos' CMake refuses device lambdas without it")

    # 4. One cuda_arch, Release, hwloc that sees GPUs.
    if not any(s == "cuda_arch=none" and w == "+cuda" and m for s, w, m in conflicts):
        err("recipe: no conflicts('cuda_arch=none', when='+cuda', msg=...): +cuda without an arch "
            "would reach Kokkos' CMake")
    pairs = set()
    for s, w, m in conflicts:
        vals = spack_stub.parse(s)["kv"].get("cuda_arch", set())
        if len(vals) == 2 and w in ("+cuda", "") and m:
            pairs.add(frozenset(vals))
    archs = spack_stub.CUDA_ARCH_VALUES
    missing = [f"{a},{b}" for i, a in enumerate(archs) for b in archs[i + 1:] if frozenset((a, b)) not in pairs]
    if missing:
        err(f"recipe: cuda_arch={missing[0]} (and {len(missing) - 1} more pairs) is not refused with a msg: "
            "CudaPackage's cuda_arch takes several values, Kokkos one")
    build_type = [k for a, k in calls("variant") if a and a[0] == "build_type"]
    if not build_type or build_type[0].get("default") != "Release":
        err("recipe: no variant('build_type', default='Release'): older Spack builds RelWithDebInfo")
    if not any(spack_stub.parse(s)["name"] == "hwloc" and {"cuda", "nvml"} <= spack_stub.parse(s)["on"]
               and w == "+cuda" for s, w, _ in deps):
        err("recipe: no depends_on('hwloc+cuda+nvml', when='+cuda'): placement would not see the GPUs")

    # 6 and 2 again, by running cmake_args() for three configurations.
    configs = {"cpu": spack_stub.mini5d_spec(),
               "cuda": spack_stub.mini5d_spec("90", "openmpi", mpi_cuda=True),
               "cray-mpich+cuda": spack_stub.mini5d_spec("90", "cray-mpich", mpi_cuda=True)}
    for name, spec in configs.items():
        try:
            args = recipe_cls(spec).cmake_args()
        except Exception as e:  # what Spack would raise at configure
            err(f"recipe: cmake_args() for {name} raises {type(e).__name__}: {e}")
            continue
        found = dict(a[2:].split("=", 1) for a in args if a.startswith("-D") and "=" in a)
        gtl = next((v for k, v in found.items() if k.split(":")[0] == "MINI5D_MPI_GTL_LINK"), None)
        cxx = next((v for k, v in found.items() if k.split(":")[0] == "CMAKE_CXX_COMPILER"), None)
        want_cxx = spec["kokkos"].package.kokkos_cxx
        if cxx != want_cxx:
            err(f"recipe: cmake_args() for {name}: CMAKE_CXX_COMPILER is {cxx}, expected Kokkos' {want_cxx}")
        if gtl is None:
            err(f"recipe: cmake_args() for {name} does not pass MINI5D_MPI_GTL_LINK")
        elif name == "cray-mpich+cuda" and "-lmpi_gtl_cuda" not in gtl.split(";"):
            err("recipe: with cray-mpich+cuda, MINI5D_MPI_GTL_LINK lacks cray-mpich's gtl_lib "
                f"(got '{gtl}'): MPI_Init aborts under MPICH_GPU_SUPPORT_ENABLED=1")
        elif name != "cray-mpich+cuda" and gtl:
            err(f"recipe: MINI5D_MPI_GTL_LINK='{gtl}' for {name}: only cray-mpich+cuda has a GTL")

    # 7. License, numbered versions, stand-alone tests.
    if ("BSD-3-Clause",) not in [a for a, _ in calls("license")]:
        err('recipe: no license("BSD-3-Clause") (the sources\' SPDX headers say BSD-3-Clause)')
    versions = {a[0]: k for a, k in calls("version") if a}
    if "main" not in versions:
        err('recipe: no version("main", branch="main")')
    if project_version not in versions:
        err(f"recipe: no version('{project_version}'), the CMake project's VERSION")
    elif versions[project_version].get("tag") != f"v{project_version}":
        err(f"recipe: version('{project_version}') is not fetched from its tag v{project_version}")
    for what, word in (("prints the version", "version"), ("trains", "train")):
        if not method_calls_with(cls_node, "test_", word):
            err(f"recipe: no stand-alone test (a test_* method) that {what} ('{word}'): `spack test run` would check nothing")
    for fn in cls_node.body:
        if isinstance(fn, ast.FunctionDef) and fn.name.startswith("test_") and not ast.get_docstring(fn):
            err(f"recipe: {fn.name} has no docstring (spack test lists it as the test's purpose)")
    for p in getattr(recipe_cls, "test_inputs", []):
        if not os.path.exists(os.path.join(root, p)):
            err(f"recipe: test_inputs names {p}, which is not in the checkout")
