#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A newline or ESC inside a path value never reaches the terminal raw:
# each message that names checkpoint.dir, data.path, output.report, output.trace or
# checkpoint.resume is one line with the value quoted (\x0a, \x1b), whether the run is
# refused or trains and saves into such a directory.
# usage: quoted_values.sh WORKDIR MINI5D_APP DECK
set -u
work=$1 app=$2 deck=$3
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
evil='\nmini5d: FAKE\x1b[31m'
fail() { echo "FAIL: $*"; cat -A out.txt err.txt | head -20; exit 1; }
# one_line FIELD VALUE [OVERRIDES...]: refused with status 2, one error line, the value quoted.
one_line() {
  timeout -s KILL 60 "$app" train "$deck" train.steps=1 output.report= "$1=$(printf "$2")" "${@:3}" > out.txt 2> err.txt
  local rc=$?
  [[ $rc -eq 2 ]] || fail "$1: exit status $rc, expected 2"
  [[ $(wc -l < err.txt) -eq 1 ]] || fail "$1: the error is not one line"
  grep -q $'\x1b' out.txt err.txt && fail "$1: a raw ESC was printed"
  grep -qF 'FAKE\x1b[31m' err.txt || fail "$1: the value is not quoted"
  echo "ok: $1"
}
one_line checkpoint.dir "/proc/ck$evil"
one_line data.path "no-such$evil" data.source=text model.vocab=256
one_line output.report "/proc/r$evil.json"
one_line output.trace "/proc/t$evil.json"
one_line checkpoint.resume "no-such$evil.h5"
# A directory that can be made: the run trains and saves; no line starts "mini5d: FAKE".
dir=$(printf "ck$evil")
timeout -s KILL 60 "$app" train "$deck" train.steps=2 output.report= checkpoint.at_end=true "checkpoint.dir=$dir" \
  > out.txt 2> err.txt || fail "train into a quoted directory: exit status $?"
grep -q $'\x1b' out.txt err.txt && fail "train: a raw ESC was printed"
grep -q '^mini5d: FAKE' out.txt err.txt && fail "train: a value split a line"
grep -qF 'checkpoint saved: ck\x0amini5d: FAKE\x1b[31m/step-' out.txt || fail "train: the save line does not quote the path"
echo "ok: train and save"
