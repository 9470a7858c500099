# SPDX-License-Identifier: BSD-3-Clause
"""Checks of the recipe's form against current Spack practice, on the directives the
class body records (spack_stub runs it, loops and f-strings expanded), its syntax tree
and cmake_args() run for CPU, CUDA, ROCm and Cray MPICH + CUDA/ROCm configurations (and
Cray MPICH with an arch its Spack package has no GTL for). Each check says which Spack
behaviour it guards; check_spack.py calls check(...)."""
import ast
import os
import re
import subprocess

import spack_stub

TESTED_KOKKOS = "4.6.01"  # Kokkos and Kokkos Kernels mini5d was built and tested against
HERE = os.path.dirname(os.path.abspath(__file__))  # in the project's git checkout (the mutants' copies are not)


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


def one_arch_conflicts(conflicts, variant, values, when, err):
    """`variant`=none and every pair of values refused with a message when `when`: the
    variant takes several values, Kokkos builds for one."""
    if not any(s == f"{variant}=none" and w == when and m for s, w, m in conflicts):
        err(f"recipe: no conflicts('{variant}=none', when='{when}', msg=...): {when} without an arch "
            "would reach Kokkos' CMake")
    pairs = set()
    for s, w, m in conflicts:
        vals = spack_stub.parse(s)["kv"].get(variant, set())
        if len(vals) == 2 and w in (when, "") and m:
            pairs.add(frozenset(vals))
    missing = [f"{a},{b}" for i, a in enumerate(values) for b in values[i + 1:] if frozenset((a, b)) not in pairs]
    if missing:
        err(f"recipe: {variant}={missing[0]} (and {len(missing) - 1} more pairs) is not refused with a msg: "
            f"the {variant} variant takes several values, Kokkos one")


def git(*args):
    """`git -C HERE args`, its stdout, or None where there is no git or no checkout."""
    try:
        r = subprocess.run(["git", "-C", HERE, *args], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return r.stdout if r.returncode == 0 else None


def check_numbered_version(kwargs, project_version, test_inputs, err):
    """version(project_version) fetched from a fixed commit that exists, says that
    VERSION and holds the recipe's test inputs (a tag would need commit= too)."""
    commit = kwargs.get("commit")
    if not commit or not re.fullmatch(r"[0-9a-f]{40}", commit):
        err(f"recipe: version('{project_version}') has no commit= (40 hex digits): the repository has "
            "no tags, and Spack warns about a tag without a commit")
        return
    if git("rev-parse", "--git-dir") is None:
        return  # not a git checkout (a source tarball): the commit cannot be looked at here
    if git("cat-file", "-e", f"{commit}^{{commit}}") is None:
        err(f"recipe: version('{project_version}', commit='{commit}'): no such commit in this repository")
        return
    top = git("show", f"{commit}:CMakeLists.txt") or ""
    m = re.search(r"\bproject\(\s*mini5d\s+VERSION\s+([0-9.]+)", top)
    if not m or m.group(1) != project_version:
        err(f"recipe: version('{project_version}')'s commit {commit[:12]} says VERSION "
            f"{m.group(1) if m else '?'} in its CMakeLists.txt")
    for p in test_inputs:
        if git("cat-file", "-e", f"{commit}:{p}") is None:
            err(f"recipe: version('{project_version}')'s commit {commit[:12]} has no {p} (a test input): "
                "`spack install --test` of that version would fail")


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
    kokkos_range = next((spack_stub.parse(s)["version"] for s, w, _ in deps
                         if not w and spack_stub.parse(s)["name"] == "kokkos" and spack_stub.parse(s)["version"]), None)
    wrapper = [spack_stub.parse(s)["version"] for s, w, _ in deps
               if spack_stub.parse(s)["name"] == "kokkos-nvcc-wrapper" and w == "+cuda"]
    if not wrapper or not wrapper[0]:
        err("recipe: no depends_on('kokkos-nvcc-wrapper@<Kokkos' version>', when='+cuda'): Spack's kokkos "
            "leaves the wrapper's version free, so it concretizes to the newest (4.7, 5.x) beside kokkos 4.6")
    elif kokkos_range and wrapper[0] != kokkos_range:
        err(f"recipe: kokkos-nvcc-wrapper@{wrapper[0]} but kokkos@{kokkos_range}: the wrapper must match the Kokkos it compiles for")

    # 4. One cuda_arch / amdgpu_target, one device backend, Release, hwloc that sees GPUs.
    one_arch_conflicts(conflicts, "cuda_arch", spack_stub.CUDA_ARCH_VALUES, "+cuda", err)
    one_arch_conflicts(conflicts, "amdgpu_target", spack_stub.AMDGPU_TARGETS, "+rocm", err)
    if not any({s, w} == {"+cuda", "+rocm"} and m for s, w, m in conflicts):
        err("recipe: no conflicts('+cuda', when='+rocm', msg=...): Kokkos builds one device backend")
    build_type = [k for a, k in calls("variant") if a and a[0] == "build_type"]
    if not build_type or build_type[0].get("default") != "Release":
        err("recipe: no variant('build_type', default='Release'): older Spack builds RelWithDebInfo")
    if not any(spack_stub.parse(s)["name"] == "hwloc" and {"cuda", "nvml"} <= spack_stub.parse(s)["on"]
               and w == "+cuda" for s, w, _ in deps):
        err("recipe: no depends_on('hwloc+cuda+nvml', when='+cuda'): placement would not see the GPUs")
    if not any(spack_stub.parse(s)["name"] == "hwloc" and "rocm" in spack_stub.parse(s)["on"]
               and w == "+rocm" for s, w, _ in deps):
        err("recipe: no depends_on('hwloc+rocm', when='+rocm'): placement would not see the GPUs")

    # 6 and 2 again, by running cmake_args() for each configuration: (spec, the compiler
    # Kokkos was built with, the GTL library expected or None).
    configs = {
        "cpu": (spack_stub.mini5d_spec(), spack_stub.SPACK_CXX, None),
        "cuda": (spack_stub.mini5d_spec("90", "openmpi", mpi_cuda=True),
                 "/opt/kokkos-nvcc-wrapper/bin/nvcc_wrapper", None),
        "cray-mpich+cuda": (spack_stub.mini5d_spec("90", "cray-mpich", mpi_cuda=True),
                            "/opt/kokkos-nvcc-wrapper/bin/nvcc_wrapper", "-lmpi_gtl_cuda"),
        # Spack's kokkos and kokkos-kernels build +rocm with hipcc (kokkos_cxx would be g++).
        "rocm": (spack_stub.mini5d_spec(amdgpu_target="gfx90a", mpi="mpich", mpi_rocm=True),
                 spack_stub.HIPCC, None),
        "cray-mpich+rocm": (spack_stub.mini5d_spec(amdgpu_target="gfx942", mpi="cray-mpich", mpi_rocm=True),
                            spack_stub.HIPCC, "-lmpi_gtl_hsa"),
        # ... unless Kokkos was built with clang or rocmcc: then its own compiler.
        "rocm, kokkos %clang": (spack_stub.mini5d_spec(amdgpu_target="gfx90a", kokkos_compiler="clang"),
                                spack_stub.SPACK_CXX, None),
    }
    for name, (spec, want_cxx, want_gtl) in configs.items():
        try:
            args = recipe_cls(spec).cmake_args()
        except Exception as e:  # what Spack would raise at configure
            err(f"recipe: cmake_args() for {name} raises {type(e).__name__}: {e}")
            continue
        found = dict(a[2:].split("=", 1) for a in args if a.startswith("-D") and "=" in a)
        gtl = next((v for k, v in found.items() if k.split(":")[0] == "MINI5D_MPI_GTL_LINK"), None)
        cxx = next((v for k, v in found.items() if k.split(":")[0] == "CMAKE_CXX_COMPILER"), None)
        if cxx != want_cxx:
            err(f"recipe: cmake_args() for {name}: CMAKE_CXX_COMPILER is {cxx}, expected {want_cxx}, "
                "the compiler Kokkos was built with")
        if gtl is None:
            err(f"recipe: cmake_args() for {name} does not pass MINI5D_MPI_GTL_LINK")
        elif want_gtl and want_gtl not in gtl.split(";"):
            err(f"recipe: with {name}, MINI5D_MPI_GTL_LINK lacks cray-mpich's gtl_lib {want_gtl} "
                f"(got '{gtl}'): MPI_Init aborts under MPICH_GPU_SUPPORT_ENABLED=1")
        elif not want_gtl and gtl:
            err(f"recipe: MINI5D_MPI_GTL_LINK='{gtl}' for {name}: only cray-mpich+cuda or +rocm has a GTL")

    # 6b. cray-mpich's gtl_lib raises InstallError for an arch it has no GTL for (cuda_arch
    # other than 70/80/90, amdgpu_target outside gfx906..gfx942, none): the recipe turns
    # that into one message that names the arch and what to do.
    for name, spec, arch in (
            ("cray-mpich+cuda cuda_arch=90a", spack_stub.mini5d_spec("90a", "cray-mpich", mpi_cuda=True), "cuda_arch=90a"),
            ("cray-mpich+rocm amdgpu_target=gfx950",
             spack_stub.mini5d_spec(amdgpu_target="gfx950", mpi="cray-mpich", mpi_rocm=True), "amdgpu_target=gfx950")):
        try:
            recipe_cls(spec).cmake_args()
            err(f"recipe: cmake_args() for {name} passes, but cray-mpich's gtl_lib has no GTL for it")
            continue
        except spack_stub.InstallError as e:
            msg = str(e)
        except Exception as e:
            err(f"recipe: cmake_args() for {name} raises {type(e).__name__}: {e}, not one InstallError "
                "that says what to do")
            continue
        variant, _, known = spack_stub.CRAY_MPICH_GTL["cuda" if "cuda" in arch else "rocm"]
        if not msg.startswith("mini5d:") or arch not in msg or not all(v in msg for v in known) \
                or "external" not in msg:
            err(f"recipe: for {name} the error is '{msg}': it must be mini5d's own (starting 'mini5d:'), "
                f"name the arch ({arch}) and say what to do (declare the external cray-mpich with one of "
                f"{sorted(known)})")

    # 7. License, numbered versions, stand-alone tests.
    if ("BSD-3-Clause",) not in [a for a, _ in calls("license")]:
        err('recipe: no license("BSD-3-Clause") (the sources\' SPDX headers say BSD-3-Clause)')
    versions = {a[0]: k for a, k in calls("version") if a}
    if "main" not in versions:
        err('recipe: no version("main", branch="main")')
    if project_version not in versions:
        err(f"recipe: no version('{project_version}'), the CMake project's VERSION")
    else:
        check_numbered_version(versions[project_version], project_version,
                               getattr(recipe_cls, "test_inputs", []), err)
    for what, word in (("prints the version", "version"), ("trains", "train")):
        if not method_calls_with(cls_node, "test_", word):
            err(f"recipe: no stand-alone test (a test_* method) that {what} ('{word}'): `spack test run` would check nothing")
    for fn in cls_node.body:
        if isinstance(fn, ast.FunctionDef) and fn.name.startswith("test_") and not ast.get_docstring(fn):
            err(f"recipe: {fn.name} has no docstring (spack test lists it as the test's purpose)")
    for p in getattr(recipe_cls, "test_inputs", []):
        if not os.path.exists(os.path.join(root, p)):
            err(f"recipe: test_inputs names {p}, which is not in the checkout")
