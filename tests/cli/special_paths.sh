#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Paths that are not regular files, made by the test in its own folder (never a system
# device): a FIFO as the deck, as data.path, as output.report, as output.trace and as
# calibrate --out is refused at once with one line (a FIFO used to block the open for
# ever), and the FIFO is still a FIFO; a trace in a missing folder is refused at start-up
# (it used to fail after training);
# a character device node as output.report is refused and stays a device (renaming the
# report over it used to replace it); a symbolic link as output.report is followed (the
# target gets the report, the link stays a link), unless it leads to a FIFO; `latest`
# naming a file outside its directory is refused, not followed; paths in messages are
# quoted (an escape byte as \x1b) and cut (a 100 KB path); `mini5d --help`, `-h` and
# `help` print mini5d's own usage and exit 0.
# usage: special_paths.sh WORKDIR MINI5D_APP DECK
set -u
work=$1 app=$2 deck=$3
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
fail() { echo "FAIL: $*"; [[ -f run.err ]] && cat run.err; exit 1; }
# refused WHAT EXPECTED ARGS...: exit 2 within 20 s, EXPECTED once on stderr.
refused() {
  local what=$1 expected=$2
  shift 2
  timeout 20 "$app" "$@" > run.out 2> run.err
  local status=$?
  [[ $status -eq 124 ]] && fail "$what: still blocked after 20 s"
  [[ $status -eq 2 ]] || fail "$what: exit $status, expected 2"
  [[ $(grep -cF -- "$expected" run.err) -eq 1 ]] || fail "$what: not one line with '$expected'"
  echo "ok: $what refused"
}
mkfifo fifo
refused "a FIFO as the deck" "fifo: is not a regular file (a FIFO, device or socket), not a deck file" check fifo
refused "a FIFO as data.path" "fifo: data.path is not a regular file" \
  train "$deck" data.source=text data.path=fifo model.vocab=256 train.steps=2 checkpoint.dir=ck1
refused "a FIFO as output.report" "fifo: output.report is a FIFO; mini5d writes it by renaming a new file over it" \
  train "$deck" train.steps=2 checkpoint.dir=ck2 output.report=fifo
refused "a FIFO as output.trace" "fifo: output.trace is not a regular file" \
  train "$deck" train.steps=2 checkpoint.dir=ck2t output.trace=fifo
refused "output.trace in a missing folder, at start-up" "no_dir/t.json: cannot write the trace (output.trace): No such file or directory" \
  train "$deck" train.steps=2 checkpoint.dir=ck2u output.trace=no_dir/t.json
refused "a FIFO as calibrate --out" "fifo: calibrate --out is a FIFO; mini5d writes it by renaming" \
  calibrate "$deck" --quick --out fifo
[[ -p fifo ]] || fail "the FIFO was replaced"
ln -s fifo to-fifo
refused "a link to a FIFO as output.report" "to-fifo: output.report is a FIFO (fifo, where its link leads)" \
  train "$deck" train.steps=2 checkpoint.dir=ck3 output.report=to-fifo
if mknod chardev c 1 3 2>/dev/null; then  # the numbers of /dev/null, in this folder
  refused "a character device as output.report" "chardev: output.report is a character device" \
    train "$deck" train.steps=2 checkpoint.dir=ck4 output.report=chardev
  [[ -c chardev ]] || fail "the device node was replaced"
else
  echo "note: mknod not permitted here; the device case is covered by the FIFO's (the same check)"
fi

# A link to a regular file: followed.
echo '{}' > real.json
ln -s real.json link.json
timeout 120 "$app" train "$deck" train.steps=2 checkpoint.dir=ck5 output.report=link.json > run.out 2> run.err ||
  fail "a run reporting through a link failed"
[[ -L link.json && $(readlink link.json) == real.json ]] || fail "the link was replaced"
python3 -c "import json; json.load(open('real.json'))['fom']" || fail "real.json did not get the report"
echo "ok: a link as output.report writes its target and stays a link"

# `latest` naming a file elsewhere.
mkdir -p other ck6 && cp ck5/step-*.h5 other/ 2>/dev/null || true
echo "../other/step-00000002.h5" > ck6/latest
refused "latest naming another directory" "ck6/latest: names '../other/step-00000002.h5', not a checkpoint file in its own directory" \
  train "$deck" train.steps=4 checkpoint.dir=ck7 resume=ck6

# Paths are quoted and cut in messages: an escape sequence is shown as \x1b, never sent
# to the terminal, and a 100 KB path gives a short line.
timeout 20 "$app" check $'esc\x1b[31m.yaml' > run.out 2> run.err
grep -qF 'esc\x1b[31m.yaml: cannot open the deck file' run.err || fail "the escape byte was not quoted"
grep -q $'\x1b' run.err && fail "a raw escape byte reached stderr"
long=$(head -c 100000 /dev/zero | tr '\0' a)
timeout 20 "$app" check "$long" > run.out 2> run.err
[[ $? -eq 2 && $(wc -c < run.err) -lt 1000 ]] || fail "a 100 KB path gave $(wc -c < run.err) bytes of message"
grep -qF "... (100000 bytes): cannot open the deck file" run.err || fail "the long path was not cut with its size"
timeout 20 "$app" train "$deck" train.steps=2 checkpoint.dir=ck8 output.report="$long/r.json" > run.out 2> run.err
[[ $? -eq 2 && $(wc -c < run.err) -lt 1000 ]] || fail "a 100 KB report path gave $(wc -c < run.err) bytes of message"
echo "ok: paths in messages quoted and cut"

for h in --help -h help; do
  timeout 20 "$app" "$h" > help.out 2> help.err || fail "mini5d $h: exit $?"
  head -n 1 help.out | grep -q "^mini5d: GPT-style training mini-app" || fail "mini5d $h: not mini5d's help: $(head -n 3 help.out)"
  grep -q "^usage: mini5d train" help.out || fail "mini5d $h: no usage"
done
echo "ok: --help, -h and help print mini5d's usage, exit 0"
