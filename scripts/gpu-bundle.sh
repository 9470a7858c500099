#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copies into BUILD_DIR/gpu-libs the shared libraries mini5d's programs and unit tests
# load that a bare GPU node lacks (MPI, HDF5, hwloc, yaml-cpp, OpenBLAS, libgfortran,
# UCX ...), so that scripts/gpu-check.sh runs there from this build with no install.
# Left out: the C library and loader, and the GPU vendor's own libraries (CUDA, ROCm,
# the driver), which the GPU node has and which must match its driver.
# usage: scripts/gpu-bundle.sh BUILD_DIR   (prints the folder and its size)
set -euo pipefail
[[ $# -eq 1 ]] || { sed -n '3,8p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
build=$(cd "$1" && pwd)
dest=$build/gpu-libs
mkdir -p "$dest"
skip='^(linux-vdso|ld-linux|libc\.|libm\.|libdl\.|librt\.|libpthread\.|libresolv\.|libcuda\.|libnvidia|libcudart|libcublas|libcusparse|libcusolver|libnvJitLink|libamdhip64|libhsa-runtime|librocblas|librocsolver|libhipblas|libdrm|libnuma)'
programs=("$build/apps/mini5d" "$build"/tests/unit/test_*)
for p in "${programs[@]}"; do
  [[ -x $p && -f $p ]] || continue
  ldd "$p" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}'
done | sort -u | while read -r name path; do
  [[ $name =~ $skip ]] && continue
  cp -L -n "$path" "$dest/$name"
done
# MPICH's hydra is not needed (one rank per program, singleton start), but UCX loads
# its transports as modules at run time.
for d in /usr/lib/x86_64-linux-gnu/ucx; do [[ -d $d ]] && cp -rL -n "$d" "$dest/" || true; done
echo "gpu-bundle: $dest ($(du -sh "$dest" | cut -f1))"
