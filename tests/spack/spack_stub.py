# SPDX-License-Identifier: BSD-3-Clause
"""A stand-in for the few parts of Spack's package API the mini5d recipe uses, so that
check_spack.py can run the recipe without Spack: the class body (its loops and f-strings
expanded into the directives Spack would record) and cmake_args() for a few concrete
configurations. It models Spack's behaviour where the recipe's correctness depends on
it: a Spec has no kokkos_cxx (that is a property of the kokkos *package*, reached as
self["kokkos"]), cray-mpich's package has gtl_lib, define() writes -DNAME:TYPE=VALUE."""
import sys
import types

directives = []  # (name, args, kwargs) in the order the class body calls them

# CudaPackage's values (Spack 1.x), enough for the recipe's loops.
CUDA_ARCH_VALUES = ("50", "52", "53", "60", "61", "62", "70", "72", "75", "80", "86", "87", "89", "90",
                    "90a", "100", "100a", "120", "120a")


def parse(text):
    """'name@ver +a ~b k=v1,v2' -> dict(name, version, on, off, kv); no ^dependencies."""
    out = {"name": "", "version": None, "on": set(), "off": set(), "kv": {}}
    for tok in text.replace("+", " +").replace("~", " ~").split():
        if tok[0] == "+":
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


class Spec:
    """A concrete node: name, version, variants (bool or set of values), dependencies.
    virtual maps a virtual name (mpi) to the dependency that provides it."""

    def __init__(self, name, version="1.0", variants=None, deps=(), virtual=None, package=None):
        self.name, self.version = name, version
        self.variants = dict(variants or {})
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


class KokkosPackage(DependencyPackage):
    @property
    def kokkos_cxx(self):
        return "/opt/kokkos-nvcc-wrapper/bin/nvcc_wrapper" if self.spec.variants.get("wrapper") else "/usr/bin/g++"


class CrayMpichPackage(DependencyPackage):
    @property
    def gtl_lib(self):
        # The builtin recipe's form: flags when +cuda (or +rocm) with an arch, else {}.
        if not self.spec.variants.get("cuda"):
            return {}
        lib = "/opt/cray/pe/mpich/8.1.30/gtl/lib"
        return {"ldflags": [f"-L{lib}", f"-Wl,-rpath,{lib}"], "ldlibs": ["-lmpi_gtl_cuda"]}


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
        return define(name, self.spec.variants[variant or name.lower()])


class CMakePackage(PackageBase):
    pass


class CudaPackage(PackageBase):
    cuda_arch_values = CUDA_ARCH_VALUES


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
    pkg.CMakePackage, pkg.CudaPackage, pkg.PackageBase = CMakePackage, CudaPackage, PackageBase
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


def mini5d_spec(cuda_arch=None, mpi="openmpi", mpi_cuda=False, version="main"):
    """A concrete mini5d: +openmp, +cuda with cuda_arch when given, over `mpi`."""
    cuda = cuda_arch is not None
    kokkos = Spec("kokkos", "4.6.01", {"cuda": cuda, "wrapper": cuda, "openmp": True}, package=KokkosPackage)
    kernels = Spec("kokkos-kernels", "4.6.01", {"cuda": cuda, "blas": True}, deps=[kokkos])
    mpi_variants = {"cuda": mpi_cuda}
    if mpi_cuda:
        mpi_variants["cuda_arch"] = {cuda_arch or "90"}
    mpi_spec = Spec(mpi, "8.1.30", mpi_variants, package=CrayMpichPackage if mpi == "cray-mpich" else None)
    deps = [kokkos, kernels, mpi_spec, Spec("cmake", "3.28")]
    variants = {"openmp": True, "planner": True, "cuda": cuda, "cuda_arch": {cuda_arch or "none"},
                "build_type": "Release"}
    return Spec("mini5d", version, variants, deps=deps, virtual={"mpi": mpi})
