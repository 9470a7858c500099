# SPDX-License-Identifier: BSD-3-Clause
"""A stand-in for the few parts of Spack's package API the mini5d recipe uses, so that
check_spack.py can run the recipe without Spack: the class body (its loops and f-strings
expanded into the directives Spack would record) and cmake_args() for a few concrete
configurations. It models Spack's behaviour where the recipe's correctness depends on
it: a Spec has no kokkos_cxx (that is a property of the kokkos *package*, reached as
self["kokkos"]; for +rocm it is the build's own compiler, not hipcc), cray-mpich's
package has gtl_lib (raising InstallError for an arch it has no GTL for, as
spack-packages' does), define() writes -DNAME:TYPE=VALUE."""
import sys
import types

directives = []  # (name, args, kwargs) in the order the class body calls them

# CudaPackage's values (Spack 1.x), enough for the recipe's loops.
CUDA_ARCH_VALUES = ("50", "52", "53", "60", "61", "62", "70", "72", "75", "80", "86", "87", "89", "90",
                    "90a", "100", "100a", "120", "120a")
# ROCmPackage's amdgpu_targets (spack-packages v2025.11), enough for the recipe's loops.
AMDGPU_TARGETS = ("gfx701", "gfx801", "gfx802", "gfx803", "gfx900", "gfx900:xnack-", "gfx902", "gfx904",
                  "gfx906", "gfx906:xnack-", "gfx908", "gfx908:xnack-", "gfx909", "gfx90a", "gfx90a:xnack-",
                  "gfx90a:xnack+", "gfx90c", "gfx940", "gfx941", "gfx942", "gfx950", "gfx1010", "gfx1011",
                  "gfx1012", "gfx1013", "gfx1030", "gfx1031", "gfx1032", "gfx1033", "gfx1034", "gfx1035",
                  "gfx1036", "gfx1100", "gfx1101", "gfx1102", "gfx1103", "gfx1150", "gfx1151", "gfx1152",
                  "gfx1153", "gfx1200", "gfx1201")
# What spack-packages' cray-mpich gtl_lib has a GTL for (v2025.07 to v2026.06).
CRAY_MPICH_GTL = {"cuda": ("cuda_arch", "mpi_gtl_cuda", {"70", "80", "90"}),
                  "rocm": ("amdgpu_target", "mpi_gtl_hsa", {"gfx906", "gfx908", "gfx90a", "gfx940", "gfx942"})}


class InstallError(Exception):
    pass


def parse(text):
    """'name@ver +a ~b k=v1,v2 %cxx=gcc' -> dict(name, version, on, off, kv, compiler);
    no ^dependencies. Values may hold ':', '+' and '-' (amdgpu_target=gfx90a:xnack+)."""
    out = {"name": "", "version": None, "on": set(), "off": set(), "kv": {}, "compiler": None}
    import re
    for tok in re.sub(r"(?<![=:,A-Za-z0-9_-])([+~])|(?<=[A-Za-z0-9_])([+~])(?=[a-z])", r" \1\2", text).split():
        if tok[0] == "%":
            out["compiler"] = tok[1:].split("=", 1)[-1]
        elif tok[0] == "+":
            out["on"].add(tok[1:])
        elif tok[0] == "~":
            out["off"].add(tok[1:])
        elif "=" in tok:
            k, v = tok.split("=", 1)
            out["kv"][k] = set(v.split(","))
        elif tok[0] == "@":
            out["version"] = tok[1:]
        else:
            name, _, ver = tok.partition("@")
            out["name"], out["version"] = name, ver or None
    return out


class Prefix(str):
    def __getattr__(self, name):
        return Prefix(self + "/" + name)

    def join(self, name):
        return Prefix(self + "/" + name)


class Variant:
    """Spack's variant object: .value is a bool, a string, or a tuple for a multi-valued one."""

    def __init__(self, name, value):
        self.name = name
        self.value = tuple(sorted(value)) if isinstance(value, set) else value


class VariantMap(dict):
    """spec.variants: [name] gives a Variant (as Spack's does); .get gives the raw value
    (the stub's own bookkeeping)."""

    def __getitem__(self, name):
        return Variant(name, dict.__getitem__(self, name))


class Spec:
    """A concrete node: name, version, variants (bool or set of values), dependencies.
    virtual maps a virtual name (mpi) to the dependency that provides it."""

    def __init__(self, name, version="1.0", variants=None, deps=(), virtual=None, package=None, compiler="gcc"):
        self.name, self.version, self.compiler = name, version, compiler
        self.variants = VariantMap(variants or {})
        self.deps = {d.name: d for d in deps}
        self.virtual = dict(virtual or {})
        self.prefix = Prefix(f"/opt/{name}")
        self.package = package(self) if package else DependencyPackage(self)

    def __getitem__(self, name):
        name = self.virtual.get(name, name)
        if name == self.name:
            return self
        return self.deps[name]

    def satisfies(self, text):
        c = parse(text)
        if c["name"] and c["name"] != self.name:
            return False
        if c["version"] and not str(self.version).startswith(c["version"]):
            return False
        if c["compiler"] and c["compiler"] != self.compiler:
            return False
        for v in c["on"]:
            if self.variants.get(v) is not True:
                return False
        for v in c["off"]:
            if self.variants.get(v) is not False:
                return False
        for k, vals in c["kv"].items():
            have = self.variants.get(k)
            have = have if isinstance(have, set) else {have}
            if not vals <= have:
                return False
        return True

    def traverse(self, deptype=None):
        yield self
        for d in self.deps.values():
            yield from d.traverse(deptype)


class DependencyPackage:
    def __init__(self, spec):
        self.spec = spec


SPACK_CXX = "/opt/spack/lib/spack/env/gcc/g++"  # the build's compiler wrapper (spack_cxx)
HIPCC = "/opt/hip/bin/hipcc"


class KokkosPackage(DependencyPackage):
    @property
    def kokkos_cxx(self):
        # spack-packages' form: nvcc_wrapper for +wrapper, else spack_cxx (also for +rocm).
        return "/opt/kokkos-nvcc-wrapper/bin/nvcc_wrapper" if self.spec.variants.get("wrapper") else SPACK_CXX


class CrayMpichPackage(DependencyPackage):
    @property
    def gtl_lib(self):
        # spack-packages' form: for +cuda, then +rocm, the GTL when every arch value is one
        # it knows, InstallError when not (none included), {} without either.
        for kind, (variant, lib, known) in CRAY_MPICH_GTL.items():
            if self.spec.variants.get(kind) is True:
                if not set(self.spec.variants.get(variant) or {"none"}) <= known:
                    raise InstallError(f"cray-mpich variant '+{kind} {variant}' was specified but no "
                                       "GTL support could be found for it.")
                d = "/opt/cray/pe/mpich/8.1.30/gtl/lib"
                return {"ldflags": [f"-L{d}", f"-Wl,-rpath,{d}"], "ldlibs": [f"-l{lib}"]}
        return {}


def define(name, value):
    if isinstance(value, bool):
        return f"-D{name}:BOOL={'ON' if value else 'OFF'}"
    if isinstance(value, (list, tuple)):
        value = ";".join(str(v) for v in value)
    return f"-D{name}:STRING={value}"


class PackageBase:
    run_tests = False

    def __init__(self, spec):
        self.spec = spec
        self.prefix = spec.prefix

    def __getitem__(self, name):
        return self.spec[name].package

    def define(self, name, value):
        return define(name, value)

    def define_from_variant(self, name, variant=None):
        return define(name, self.spec.variants[variant or name.lower()].value)


class CMakePackage(PackageBase):
    pass


class CudaPackage(PackageBase):
    cuda_arch_values = CUDA_ARCH_VALUES


class ROCmPackage(PackageBase):
    amdgpu_targets = AMDGPU_TARGETS


def _record(name):
    def directive(*args, **kwargs):
        directives.append((name, args, kwargs))
    return directive


def _decorator(*_args, **_kwargs):
    return lambda f: f


def install():
    """Registers spack and spack.package in sys.modules (the names the recipe imports)."""
    pkg = types.ModuleType("spack.package")
    for name in ("version", "variant", "depends_on", "conflicts", "requires", "license", "provides",
                 "patch", "maintainers", "resource"):
        setattr(pkg, name, _record(name))
    pkg.run_after = pkg.run_before = _decorator
    pkg.CMakePackage, pkg.CudaPackage, pkg.ROCmPackage = CMakePackage, CudaPackage, ROCmPackage
    pkg.PackageBase, pkg.InstallError = PackageBase, InstallError
    pkg.join_path = lambda *p: "/".join(p)
    pkg.SkipTest = type("SkipTest", (Exception,), {})
    pkg.__all__ = [n for n in vars(pkg) if not n.startswith("_")]
    spack = types.ModuleType("spack")
    spack.package = pkg
    sys.modules["spack"], sys.modules["spack.package"] = spack, pkg


def load_recipe(path):
    """Runs the recipe's module body; returns its Mini5d class and the directives."""
    install()
    directives.clear()
    namespace = {"__name__": "mini5d_recipe"}
    exec(compile(open(path).read(), path, "exec"), namespace)
    return namespace["Mini5d"], list(directives)


def mini5d_spec(cuda_arch=None, mpi="openmpi", mpi_cuda=False, version="main", amdgpu_target=None,
                mpi_rocm=False, mpi_arch=None, kokkos_compiler="gcc"):
    """A concrete mini5d: +openmp, +cuda with cuda_arch or +rocm with amdgpu_target when
    given, over `mpi` (+cuda or +rocm with mpi_arch, default the GPU's arch)."""
    cuda, rocm = cuda_arch is not None, amdgpu_target is not None
    kokkos = Spec("kokkos", "4.6.01", {"cuda": cuda, "wrapper": cuda, "rocm": rocm, "openmp": True},
                  package=KokkosPackage, compiler=kokkos_compiler)
    kernels = Spec("kokkos-kernels", "4.6.01", {"cuda": cuda, "blas": True, "rocblas": rocm}, deps=[kokkos])
    mpi_variants = {"cuda": mpi_cuda, "rocm": mpi_rocm}
    if mpi_cuda:
        mpi_variants["cuda_arch"] = {mpi_arch or cuda_arch or "90"}
    if mpi_rocm:
        mpi_variants["amdgpu_target"] = {mpi_arch or amdgpu_target or "gfx90a"}
    mpi_spec = Spec(mpi, "8.1.30", mpi_variants, package=CrayMpichPackage if mpi == "cray-mpich" else None)
    deps = [kokkos, kernels, mpi_spec, Spec("cmake", "3.28")]
    if rocm:
        deps.append(Spec("hip", "6.4.1"))
    variants = {"openmp": True, "planner": True, "cuda": cuda, "cuda_arch": {cuda_arch or "none"},
                "rocm": rocm, "amdgpu_target": {amdgpu_target or "none"}, "build_type": "Release"}
    return Spec("mini5d", version, variants, deps=deps, virtual={"mpi": mpi})
