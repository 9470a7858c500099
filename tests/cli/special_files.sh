#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Every file mini5d and mini5d-plan read goes through one reader that refuses anything
# but a regular file (core/regular_file.hpp). A FIFO (and, where mknod is permitted, a
# /dev/zero-like device node, made in this folder) in each place a file is read: `latest`
# under ckpt verify, ckpt info, a resume, a fresh run; checkpoint.resume; MINI5D_CEILINGS
# under train; mini5d ceilings FILE; calibrate --base; mini5d-plan --model, --cluster,
# --deck, --validate and --emit-deck. Each used to block in open() for ever (or read the
# device until memory ran out); now each is one line naming the file, exit 2, at once,
# and the train with a FIFO as its ceilings cache finishes with its report.
# usage: special_files.sh WORKDIR MINI5D_APP MINI5D_PLAN DECK CLUSTER
set -u
work=$1 app=$2 plan=$3 deck=$4 cluster=$5
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
fail() { echo "FAIL: $*"; [[ -f run.err ]] && cat run.err; exit 1; }
# refused WHAT EXPECTED PROGRAM ARGS...: exit 2 within 20 s, EXPECTED once on stderr.
refused() {
  local what=$1 expected=$2
  shift 2
  # A bound on memory: the old reader of a zero device grew without limit.
  (ulimit -v 4000000; timeout -s KILL 20 "$@" > run.out 2> run.err)
  local status=$?
  [[ $status -eq 137 ]] && fail "$what: still blocked (or reading) after 20 s"
  [[ $status -eq 2 ]] || fail "$what: exit $status, expected 2"
  [[ $(grep -cF -- "$expected" run.err) -eq 1 ]] || fail "$what: not one line with '$expected'"
  echo "ok: $what refused"
}
mkfifo fifo
kinds=(fifo)
mknod zero c 1 5 2>/dev/null && kinds+=(zero) || echo "note: mknod not permitted here; FIFOs only"
for k in "${kinds[@]}"; do
  [[ $k == fifo ]] && kind="a FIFO" || kind="a character device"
  mkdir -p "ck-$k" && ln "$k" "ck-$k/latest" 2>/dev/null || cp -a "$k" "ck-$k/latest"
  refused "latest as $kind, ckpt verify" "ck-$k/latest: is $kind, not a regular file" "$app" ckpt verify "ck-$k"
  refused "latest as $kind, ckpt info" "ck-$k/latest: is $kind, not a regular file" "$app" ckpt info "ck-$k/latest"
  refused "latest as $kind, resume=latest" "ck-$k/latest: is $kind, not a regular file" \
    "$app" train "$deck" train.steps=2 checkpoint.dir="ck-$k" resume=latest output.report=
  refused "latest as $kind, a fresh run" "ck-$k/latest: is $kind, not a regular file" \
    "$app" train "$deck" train.steps=2 checkpoint.dir="ck-$k" output.report=
  refused "$kind as checkpoint.resume" "$k: is $kind, not a regular file" \
    "$app" train "$deck" train.steps=2 checkpoint.dir="ck-r$k" checkpoint.resume="$k" output.report=
  refused "$kind as mini5d ceilings FILE" "$k: is $kind, not a regular file" "$app" ceilings "$k"
  refused "$kind as calibrate --base" "$k: is $kind, not a regular file" \
    "$app" calibrate "$deck" --quick --base "$k" --out "cal-$k.yaml"
  refused "$kind as --model" "$k: is $kind, not a regular file" "$plan" --model "$k" --cluster "$cluster"
  refused "$kind as --cluster" "$k: is $kind, not a regular file" "$plan" --model "$deck" --cluster "$k"
  refused "$kind as --deck" "$k: is $kind, not a regular file" "$plan" --deck "$k" --cluster "$cluster"
  refused "$kind as --validate" "$k: is $kind, not a regular file" "$plan" --validate "$k"
  refused "$kind as --emit-deck" "$k: cannot write file (is $kind, not a regular file)" \
    "$plan" --model "$deck" --cluster "$cluster" --emit-deck "$k"
done
[[ -p fifo ]] || fail "the FIFO was replaced"

# A FIFO as the ceilings cache is no cache: the run ends with its report and FOM line.
MINI5D_CEILINGS=$PWD/fifo timeout -s KILL 60 "$app" train "$deck" train.steps=3 checkpoint.dir=ck-c \
  output.report=r.json > run.out 2> run.err
status=$?
[[ $status -eq 137 ]] && fail "MINI5D_CEILINGS as a FIFO: the run blocked"
[[ $status -eq 0 ]] || fail "MINI5D_CEILINGS as a FIFO: exit $status"
grep -q "^FOM mini5d" run.out || fail "MINI5D_CEILINGS as a FIFO: no FOM line"
python3 -c "import json; json.load(open('r.json'))['fom']" || fail "MINI5D_CEILINGS as a FIFO: no report"
[[ -p fifo ]] || fail "the FIFO was replaced"
echo "ok: a FIFO as MINI5D_CEILINGS is no cache; the run reports"
