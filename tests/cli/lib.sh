# SPDX-License-Identifier: BSD-3-Clause
# Shared by the CLI test scripts (sourced): the set-up steps several of them need, each
# ending the test as skipped (exit 77) where this machine cannot provide what it needs.

# need_h5py: sets py to a Python that imports h5py and numpy (python3-h5py on Debian).
need_h5py() {
  py=""
  for cand in python3 /usr/bin/python3; do
    if "$cand" -c "import h5py, numpy" 2>/dev/null; then py=$cand; break; fi
  done
  [[ -n $py ]] || { echo "SKIP: no python3 with h5py"; exit 77; }
}

# in_mount_namespace SCRIPT ARGS...: runs the calling script again inside a private mount
# namespace (unshare -m; -rm when not root), where it can mount a small tmpfs that
# nothing outside sees; returns only inside the namespace (MINI5D_IN_NS=1).
in_mount_namespace() {
  [[ ${MINI5D_IN_NS:-} == 1 ]] && return 0
  local ns=(unshare -m)
  [[ $(id -u) -eq 0 ]] || ns=(unshare -rm)
  "${ns[@]}" true 2>/dev/null || { echo "SKIP: cannot create a mount namespace (unshare) for a small tmpfs"; exit 77; }
  MINI5D_IN_NS=1 exec "${ns[@]}" bash "$@"
}
