#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The recipe and the environments through a real Spack (CTest spack_real), where one is
# set up: SPACK_ROOT set and $SPACK_ROOT/bin/spack runnable (Spack >= 1.0 with its
# spack-packages repository and a solver, e.g. `spack bootstrap now` done once).
# Otherwise it prints a skip line and exits 77, which CTest reports as skipped.
#   * spack audit packages mini5d (with the repo added);
#   * spack spec for the CPU spec, +cuda cuda_arch=90 (kokkos-nvcc-wrapper@4.6 beside
#     kokkos@4.6) and +rocm amdgpu_target=gfx90a, and that +cuda without a cuda_arch and
#     +rocm with two amdgpu_targets are refused with the recipe's messages;
#   * spack concretize of each environment in spack/envs;
#   * spack install --fake of the CPU spec (no compiling: Spack's records and prefixes only).
# It changes nothing of the user's Spack: the mini5d repo, the install tree and the
# environments' copies live in WORKDIR (a new temporary directory by default), passed
# to Spack as an extra configuration scope (spack -C). No network is needed once the
# solver is there; the first concretization of a session is the slow one.
# usage: real_spack.sh REPO_ROOT [WORKDIR]
set -u
root=$(cd "$1" && pwd)
if [ -z "${SPACK_ROOT:-}" ]; then
  echo "skip: SPACK_ROOT is not set (set it to a Spack >= 1.0 checkout to run the recipe through Spack)"
  exit 77
fi
spack="$SPACK_ROOT/bin/spack"
if ! version=$("$spack" --version 2>/dev/null); then
  echo "skip: $spack does not run (SPACK_ROOT=$SPACK_ROOT)"
  exit 77
fi
work=${2:-$(mktemp -d "${TMPDIR:-/tmp}/mini5d-real-spack.XXXXXX")}
rm -rf "$work/scope" "$work/store" "$work/envs" "$work/logs"
mkdir -p "$work/scope" "$work/store" "$work/envs" "$work/logs"
cat > "$work/scope/repos.yaml" <<EOF
repos:
  mini5d: $root/spack
EOF
cat > "$work/scope/config.yaml" <<EOF
config:
  install_tree:
    root: $work/store
EOF
echo "Spack $version; repo $root/spack; work directory $work"
sp() { "$spack" -C "$work/scope" "$@"; }

failed=0
# check NAME GREP... -- COMMAND...: runs COMMAND (log in $work/logs/NAME.log); it must
# succeed and its output contain every GREP pattern (extended regular expressions).
check() {
  name=$1; shift
  pats=""
  while [ "$1" != "--" ]; do pats="$pats
$1"; shift; done
  shift
  log="$work/logs/$name.log"
  start=$(date +%s)
  if "$@" > "$log" 2>&1; then
    missing=$(printf '%s\n' "$pats" | while IFS= read -r p; do
      [ -n "$p" ] && ! grep -Eq -- "$p" "$log" && echo "$p"; done)
    if [ -z "$missing" ]; then
      echo "ok: $name ($(($(date +%s) - start)) s)"
      return
    fi
    echo "FAIL: $name: output lacks: $missing"
  else
    echo "FAIL: $name (exit $?):"
  fi
  tail -n 25 "$log" | sed 's/^/    /'
  failed=$((failed + 1))
}
# refused NAME PATTERN -- COMMAND...: COMMAND must fail with PATTERN in its output.
refused() {
  name=$1; pat=$2; shift 3
  log="$work/logs/$name.log"
  if "$@" > "$log" 2>&1; then
    echo "FAIL: $name: accepted"
    failed=$((failed + 1))
  elif grep -Eq -- "$pat" "$log"; then
    echo "ok: $name (refused: $(grep -Eo -- "$pat" "$log" | head -n 1))"
  else
    echo "FAIL: $name: refused, but without '$pat':"
    tail -n 25 "$log" | sed 's/^/    /'
    failed=$((failed + 1))
  fi
}

check audit -- sp audit packages mini5d
check spec-cpu "mini5d@[^ ]*\+openmp" "kokkos@4\.6" "kokkos-kernels@4\.6.*\+blas" -- \
  sp spec mini5d
check spec-cuda "kokkos@4\.6.*\+cuda.*cuda_arch=90" "kokkos-nvcc-wrapper@4\.6" "\+cublas" -- \
  sp spec mini5d +cuda cuda_arch=90
check spec-rocm "kokkos@4\.6.*\+rocm.*amdgpu_target=gfx90a" "kokkos-kernels@4\.6.*\+rocblas" -- \
  sp spec mini5d +rocm amdgpu_target=gfx90a
refused spec-cuda-no-arch "needs one cuda_arch" -- sp spec mini5d +cuda
refused spec-rocm-two-targets "single amdgpu_target" -- sp spec mini5d +rocm amdgpu_target=gfx90a,gfx942

# Each environment as it is, but in a copy under WORKDIR (its spack.lock and .spack-env
# stay out of the checkout), with its repo and develop paths made absolute.
for dir in "$root"/spack/envs/*/; do
  env=$(basename "$dir")
  mkdir -p "$work/envs/$env"
  sed -e "s|^  - \.\./\.\.\( .*\)\{0,1\}$|  - $root/spack|" -e "s|path: \.\./\.\./\.\.$|path: $root|" \
    "$dir/spack.yaml" > "$work/envs/$env/spack.yaml"
  check "env-$env" "mini5d@main" -- sp -e "$work/envs/$env" concretize --force
done

check install-fake-cpu "mini5d.*(Successfully installed|Installing)" -- sp install --fake mini5d
check installed "mini5d@" -- sp find mini5d

if [ "$failed" -ne 0 ]; then
  echo "$failed check(s) failed; logs in $work/logs"
  exit 1
fi
echo "ok: mini5d's recipe and environments pass $version (logs in $work/logs)"
