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

# tamper_setup APP DECK: trains DECK 2 steps into ck/ (common: the run's overrides) and
# keeps a copy of its checkpoint, $f, as pristine.h5.
# tamper EDIT: puts the pristine checkpoint back at $f, then applies EDIT, Python run
# with h5py and numpy imported and the file open for writing as `f`.
tamper_setup() {
  common=(checkpoint.dir=ck output.report=)
  "$1" train "$2" train.steps=2 checkpoint.at_end=true "${common[@]}" > first.out 2>&1 || { cat first.out; exit 1; }
  f=ck/step-00000002.h5
  cp "$f" pristine.h5
}
tamper() {
  cp pristine.h5 "$f"
  "$py" -c "
import h5py, numpy as np
with h5py.File('$f', 'r+') as f:
    $1" || { echo "FAIL: h5py could not edit: $1"; exit 1; }
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

# save_test_setup WORKDIR SCRIPT ARGS...: the start of a checkpoint-save test on a small
# tmpfs (args WORKDIR MPIEXEC NP_FLAG MINI5D_APP DECK): a fresh WORKDIR, the script
# again inside a private mount namespace, then in WORKDIR; sets work, mpiexec, npflag,
# app and deck, and defines fail (prints the run's output and ends the test) and
# run NP OVERRIDES... (the deck at -n NP with a global batch of 16, a save every 4 steps
# keeping one; output in run.out and run.err; killed after 60 s: 137).
save_test_setup() {
  local script=$1; shift
  work=$1 mpiexec=$2 npflag=$3 app=$4 deck=$5
  if [[ ${MINI5D_IN_NS:-} != 1 ]]; then rm -rf "$work" && mkdir -p "$work" || exit 1; fi
  in_mount_namespace "$script" "$@"
  cd "$work" || exit 1
  fail() { echo "FAIL: $*"; tail -3 run.out; cat run.err; exit 1; }
  run() {
    local np=$1; shift
    timeout -s KILL 60 "$mpiexec" "$npflag" "$np" "$app" train "$deck" parallel.d="$np" train.micro_batch=$((16 / np)) \
      checkpoint.every=4 checkpoint.keep=1 output.report= output.log_every=4 "$@" > run.out 2> run.err
  }
}
