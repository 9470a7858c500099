#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Start-up problems found on one rank only. Each
# rank runs in its own working directory (mpiexec's MPMD form with -wdir), so a
# relative path can exist for rank 0 and not for rank 1, as on two nodes. The job must
# end at once (no hang) with status 2 and one line naming the failing rank and file;
# a deck resolved differently on two ranks must be refused naming the ranks and field.
# usage: startup_one_rank.sh WORKDIR MPIEXEC MINI5D_APP DECK
set -u
work=$1 mpiexec=$2 app=$3 deck=$4
rm -rf "$work" && mkdir -p "$work/r0" "$work/r1" && cd "$work" || exit 1
cp "$deck" r0/deck.yaml
head -c 20000 "$deck" > r0/data.txt; while [[ $(stat -c %s r0/data.txt) -lt 4096 ]]; do cat "$deck" >> r0/data.txt; done
common=(parallel.d=2 train.micro_batch=4 train.steps=2 output.report= checkpoint.dir=ck)
two() {  # ARGS for rank 0 ; ARGS for rank 1, separated by --
  local a=() b=() into=a
  for x in "$@"; do
    if [[ $x == -- ]]; then into=b; elif [[ $into == a ]]; then a+=("$x"); else b+=("$x"); fi
  done
  timeout -s KILL 60 "$mpiexec" -n 1 -wdir "$work/r0" "$app" train "${a[@]}" : -n 1 -wdir "$work/r1" "$app" train "${b[@]}" \
    > run.out 2> run.err
}
expect() {  # STATUS MESSAGE: the run's status and its only stderr line
  local got=$?
  [[ $got -eq $1 ]] || { echo "FAIL: exit status $got, expected $1 (137: it hung)"; cat run.err; exit 1; }
  [[ $(wc -l < run.err) -eq 1 && $(cat run.err) == "$2" ]] ||
    { echo "FAIL: expected the one line: $2"; echo "stderr:"; cat run.err; exit 1; }
  echo "ok: $2"
}
two deck.yaml "${common[@]}" -- deck.yaml "${common[@]}"
expect 2 "mini5d: error: rank 1: deck.yaml: cannot open the deck file (No such file or directory)"
cp r0/deck.yaml r1/deck.yaml
data=(data.source=text data.path=data.txt model.vocab=256)
two deck.yaml "${common[@]}" "${data[@]}" -- deck.yaml "${common[@]}" "${data[@]}"
expect 2 "mini5d: error: rank 1: data.txt: cannot open data file (No such file or directory)"
two deck.yaml "${common[@]}" -- deck.yaml "${common[@]}" train.lr=0.1
expect 2 "mini5d: error: deck.yaml: the resolved deck differs between ranks (rank 1 differs from rank 0: rank 0 has \"  lr: 0.01\", rank 1 \"  lr: 0.1\"); every rank must read the same deck file with the same overrides"
# And a failure every rank shares is still said once, without rank numbers.
two deck.yaml "${common[@]}" train.steps=x -- deck.yaml "${common[@]}" train.steps=x
expect 2 "mini5d: error: command line: train.steps: expected an integer in [0, 1000000000000], got \"x\""
