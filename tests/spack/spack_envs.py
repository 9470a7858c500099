# SPDX-License-Identifier: BSD-3-Clause
"""Checks of the Spack environments in spack/envs/<name>/spack.yaml: one directory per
environment (each its own spack.lock and view), each building this checkout with the
repo's recipe, one mini5d spec with the right backend and arch and only the recipe's
variants, and, for CUDA and ROCm, an MPI requirement that admits GPU-aware providers only.
check_spack.py calls check(...)."""
import os
import re

import yaml

import spack_stub

# name -> (device backend, its arch); (None, None): CPU.
ENVS = {"cpu": (None, None), "cuda": ("cuda", "90"), "cuda-sm80": ("cuda", "80"),
        "rocm-gfx90a": ("rocm", "gfx90a"), "rocm-gfx942": ("rocm", "gfx942")}
ARCH_VARIANT = {"cuda": "cuda_arch", "rocm": "amdgpu_target"}
# Providers of mpi that take device pointers with that variant, in the spec form a
# requirement names them (spack-packages' mvapich2 has +cuda, no +rocm).
GPU_AWARE_MPI = {"cuda": ("openmpi", "mpich", "mvapich2", "cray-mpich"),
                 "rocm": ("openmpi", "mpich", "cray-mpich")}


def mpi_requirement(env):
    """The specs a `packages: mpi: require:` admits (strings, one_of/any_of lists), or []."""
    req = ((env.get("packages") or {}).get("mpi") or {}).get("require") or []
    req = [req] if isinstance(req, (str, dict)) else req
    specs = []
    for r in req:
        if isinstance(r, str):
            specs.append(r)
        elif isinstance(r, dict):
            specs += r.get("one_of", []) + r.get("any_of", []) + ([r["spec"]] if "spec" in r else [])
    return specs


def check(root, variants, err):
    if os.path.exists(os.path.join(root, "spack.yaml")):
        err("spack.yaml at the top of the checkout: environments live in spack/envs/<name>/ "
            "(one shared file means one shared lock and view)")
    arches = {}
    for name, (backend, arch) in ENVS.items():
        d = os.path.join(root, "spack", "envs", name)
        path = os.path.join(d, "spack.yaml")
        if not os.path.isfile(path):
            err(f"no Spack environment {os.path.relpath(path, root)}")
            continue
        where = os.path.relpath(path, root)
        env = yaml.safe_load(open(path))
        if not isinstance(env, dict) or not isinstance(env.get("spack"), dict):
            err(f"{where}: no spack: section")
            continue
        env = env["spack"]
        if "definitions" in env and any("when" in x for x in env["definitions"]):
            err(f"{where}: definitions chosen by `when:` share one lock and view: one directory per environment")
        repos = env.get("repos") or []
        if not repos:
            err(f"{where}: no repos: the repo's own recipe is not used")
        for r in repos:
            rp = os.path.normpath(os.path.join(d, r))
            if not os.path.isfile(os.path.join(rp, "repo.yaml")):
                err(f"{where}: repos: {r} has no repo.yaml")
            elif yaml.safe_load(open(os.path.join(rp, "repo.yaml")))["repo"]["namespace"] != "mini5d":
                err(f"{where}: repos: {r}: namespace is not mini5d")
            elif not os.path.isfile(os.path.join(rp, "packages", "mini5d", "package.py")):
                err(f"{where}: repos: {r} holds no packages/mini5d/package.py")
        dev = (env.get("develop") or {}).get("mini5d", {})
        if not os.path.isfile(os.path.join(d, dev.get("path", "/nonexistent"), "CMakeLists.txt")) or \
                os.path.realpath(os.path.join(d, dev.get("path", ""))) != os.path.realpath(root):
            err(f"{where}: develop: mini5d: path is not this checkout")
        specs = [s for s in env.get("specs", []) if isinstance(s, str) and re.match(r"mini5d(@|\s|$)", s)]
        if len(specs) != 1:
            err(f"{where}: {len(specs)} mini5d specs, expected 1")
            continue
        spec = specs[0]
        if not spec.startswith(dev.get("spec", "?")):
            err(f"{where}: '{spec}' is not the develop spec {dev.get('spec')}")
        for v in re.findall(r"[+~]([a-z_]+)|\b([a-z_]+)=", spec):
            if (v[0] or v[1]) not in variants:
                err(f"{where}: '{spec}': the recipe has no variant {v[0] or v[1]}")
        c = spack_stub.parse(spec)
        if backend is None:
            if "cuda" not in c["off"] or c["on"] & {"cuda", "rocm"}:
                err(f"{where}: the CPU environment's spec '{spec}' must say ~cuda (and not +rocm)")
            continue
        variant = ARCH_VARIANT[backend]
        other = "rocm" if backend == "cuda" else "cuda"
        vals = c["kv"].get(variant)
        if backend not in c["on"] or not vals:
            err(f"{where}: the {backend} environment's spec '{spec}' needs +{backend} and {variant}")
            continue
        if other in c["on"]:
            err(f"{where}: the {backend} environment's spec '{spec}' also says +{other}")
        if vals != {arch}:
            err(f"{where}: {variant}={','.join(sorted(vals))}, expected {arch} for this environment")
        arches[name] = (backend, ",".join(sorted(vals)))
        allowed = mpi_requirement(env)
        if not allowed:
            err(f"{where}: packages: mpi: require: is missing: an MPI that cannot take {backend} device "
                "pointers could be chosen silently")
        for s in allowed:
            m = spack_stub.parse(s)
            if m["name"] not in GPU_AWARE_MPI[backend] or backend not in m["on"]:
                err(f"{where}: packages: mpi: require: admits '{s}', which is not a +{backend} build of "
                    f"{', '.join(GPU_AWARE_MPI[backend])}")
            elif m["kv"].get(variant, {arch}) != {arch}:
                err(f"{where}: packages: mpi: require: '{s}' is for another {variant} than {arch}")
    if len(set(arches.values())) != len(arches):
        err(f"two GPU environments build the same backend and arch: {arches}")
