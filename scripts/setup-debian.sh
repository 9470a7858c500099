#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Installs the Debian 12 packages mini5d needs to build, test and run its demo,
# skipping those already installed. Run as root (or with sudo available).
# Usage: scripts/setup-debian.sh [--bench] [--oracle] [--slurm]
#   --bench  adds the PyTorch peer and matplotlib for perf/plot_*.py
#   --oracle adds PyTorch for the `oracle` tests' reference model (tests/oracle)
#   --slurm  adds the test extras for the `slurm` tests: Slurm and munge (scripts/start-slurm.sh)
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libtrilinos-kokkos-dev libtrilinos-kokkos-kernels-dev   # Kokkos 3.4 (Serial) + Kernels
  libopenblas-dev                                         # BLAS behind KokkosBlas::gemm
  mpich libmpich-dev                                      # MPI
  libhdf5-mpich-dev hdf5-tools                            # parallel HDF5 + h5dump
  libhwloc-dev hwloc                                      # placement
  catch2                                                  # tests (v2)
  libyaml-cpp-dev                                         # input decks
  python3                                                 # perf scripts, JSON checks
  python3-h5py                                            # tests read checkpoints with h5py
  python3-yaml                                            # tests parse the Spack environments and CITATION.cff
  clang libclang-rt-14-dev                                # tests: libFuzzer, ASan, UBSan (tests/fuzz)
  iproute2 util-linux                                     # the test cluster: ip, tc, nsenter, unshare
  libucx-dev                                              # the test cluster: its MPI_Finalize fix (ucp.h)
)
for arg in "$@"; do
  case $arg in
    --bench) packages+=(python3-torch libopenblas0-openmp python3-matplotlib) ;;
    --oracle) packages+=(python3-torch python3-numpy) ;;
    # slurmctld + slurmd + the client commands, and munge for their authentication.
    --slurm) packages+=(slurm-wlm slurm-client munge) ;;
    *) echo "setup-debian.sh: unknown option '$arg' (valid: --bench, --oracle, --slurm)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "setup: all ${#packages[@]} Debian packages already installed"
  exit 0
fi

echo "setup: installing ${missing[*]}"
SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO=sudo; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: done"
