#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Builds a threaded Kokkos (OpenMP backend) for the `openmp` tests, from Debian's own
# source package: Debian ships Kokkos 3.4.01 and Kokkos Kernels 3.4.01 inside Trilinos
# 13.2 but compiled for Serial only, and no other threaded Kokkos is in Debian 12. The
# source comes through apt with a private source list (a deb-src entry for Debian's
# archive, checked against Debian's archive key; the system's apt configuration is not
# touched), so it is the exact code of the installed packages. Both libraries are configured standalone, with
# OpenMP and Serial, C++17, Release, BLAS from OpenBLAS, and no pre-instantiated kernels
# (mini5d instantiates the few it uses), which keeps the build to a few minutes.
# Reused when present: a finished prefix holds a .complete stamp.
# usage: scripts/build-kokkos-openmp.sh [PREFIX]   (default: .deps/kokkos-openmp in the repo)
# Prints the prefix on standard output (progress goes to standard error), so
# `kokkos=$(scripts/build-kokkos-openmp.sh)` works. Environment: JOBS (default: all cores).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
prefix=${1:-$root/.deps/kokkos-openmp}
jobs=${JOBS:-$(nproc)}
if [[ -f $prefix/.complete ]]; then
  echo "kokkos-openmp: reusing $prefix ($(cat "$prefix/.complete"))" >&2
  echo "$prefix"
  exit 0
fi
work=$prefix.work
rm -rf "$work" && mkdir -p "$work/apt/lists/partial" "$work/src"
log=$work/build.log
step() { echo "kokkos-openmp: $*" >&2; }
die() { echo "kokkos-openmp: $* (log: $log)" >&2; exit 1; }

# 1. The source package, through apt, verified against Debian's signed Release file.
# The list is in deb822 form, which apt recognises by the .sources ending.
cat >"$work/apt/debian-src.sources" <<'EOF'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
apt_opts=(-o Dir::Etc::SourceList="$work/apt/debian-src.sources" -o Dir::Etc::SourceParts=/dev/null
          -o Dir::State::Lists="$work/apt/lists" -o Dir::Cache="$work/apt/cache" -qq)
step "fetching Debian's trilinos source package (about 166 MB)"
apt-get "${apt_opts[@]}" update >>"$log" 2>&1 || die "apt-get update of the deb-src list failed"
(cd "$work/src" && apt-get "${apt_opts[@]}" source --download-only trilinos >>"$log" 2>&1) ||
  die "apt-get source --download-only trilinos failed"
tarball=$(ls "$work"/src/trilinos_*.orig.tar.gz 2>/dev/null | head -n 1)
[[ -n $tarball ]] || die "no trilinos_*.orig.tar.gz downloaded"
# (tar stops on SIGPIPE once head has its line: not an error)
top=$(tar tzf "$tarball" | head -n 1 | cut -d/ -f1 || true)
[[ -n $top ]] || die "cannot list $tarball"
tar xzf "$tarball" -C "$work/src" --strip-components=2 "$top/packages/kokkos" "$top/packages/kokkos-kernels" ||
  die "cannot unpack packages/kokkos and packages/kokkos-kernels from $tarball"
version=$(sed -n 's/^set(Kokkos_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\).*/\2/p' "$work/src/kokkos/CMakeLists.txt" |
          paste -sd. -)

# 2. Kokkos: OpenMP (the default execution space) and Serial.
step "building Kokkos ${version:-?} with OpenMP into $prefix ($jobs jobs)"
cmake -S "$work/src/kokkos" -B "$work/build-kokkos" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_STANDARD=17 \
  -DCMAKE_INSTALL_PREFIX="$prefix" -DKokkos_ENABLE_OPENMP=ON -DKokkos_ENABLE_SERIAL=ON \
  -DKokkos_ENABLE_TESTS=OFF -DKokkos_ENABLE_EXAMPLES=OFF >>"$log" 2>&1 || die "Kokkos configure failed"
cmake --build "$work/build-kokkos" -j "$jobs" >>"$log" 2>&1 || die "Kokkos build failed"
cmake --install "$work/build-kokkos" >>"$log" 2>&1 || die "Kokkos install failed"

# 3. Kokkos Kernels on it: BLAS from OpenBLAS, no default instantiations.
step "building Kokkos Kernels with BLAS"
cmake -S "$work/src/kokkos-kernels" -B "$work/build-kernels" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_STANDARD=17 \
  -DCMAKE_INSTALL_PREFIX="$prefix" -DKokkos_ROOT="$prefix" -DKokkosKernels_ENABLE_TPL_BLAS=ON \
  -DKokkosKernels_ADD_DEFAULT_ETI=OFF -DKokkosKernels_ENABLE_TESTS=OFF -DKokkosKernels_ENABLE_EXAMPLES=OFF \
  >>"$log" 2>&1 || die "Kokkos Kernels configure failed"
cmake --build "$work/build-kernels" -j "$jobs" >>"$log" 2>&1 || die "Kokkos Kernels build failed"
cmake --install "$work/build-kernels" >>"$log" 2>&1 || die "Kokkos Kernels install failed"

echo "Kokkos ${version:-?} + Kokkos Kernels, OpenMP+Serial, from $(basename "$tarball")" >"$prefix/.complete"
rm -rf "$work"
step "done"
echo "$prefix"
