#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Outputs that would destroy an input of the run are refused at start-up, one line,
# exit 2, the input unchanged: output.report or output.trace naming the deck (also by
# another spelling), the data file, `latest` of checkpoint.dir, or each other. They used
# to be written after training, over the deck or the checkpoint pointer. And stale
# temporaries that are symbolic links (r.json.tmp, step-N.h5.tmp, latest.tmp) are
# replaced, never written through: their targets, outside the folder, stay as they were
# (they used to be truncated and overwritten).
# usage: output_clash.sh WORKDIR MINI5D_APP DECK
set -u
work=$1 app=$2 deck_src=$3
rm -rf "$work" && mkdir -p "$work/run" "$work/outside" && cd "$work/run" || exit 1
fail() { echo "FAIL: $*"; [[ -f run.err ]] && cat run.err; exit 1; }
cp "$deck_src" deck.yaml && cp deck.yaml deck.orig
# refused WHAT EXPECTED ARGS...: exit 2 within 60 s, EXPECTED once on stderr.
refused() {
  local what=$1 expected=$2
  shift 2
  timeout -s KILL 60 "$app" "$@" > run.out 2> run.err
  local status=$?
  [[ $status -eq 2 ]] || fail "$what: exit $status, expected 2"
  [[ $(grep -cF -- "$expected" run.err) -eq 1 ]] || fail "$what: not one line with '$expected'"
  echo "ok: $what refused"
}
refused "output.report = the deck" "deck.yaml: output.report is the deck file" \
  train deck.yaml train.steps=2 checkpoint.dir=ck1 output.report=deck.yaml
refused "output.trace = the deck, spelt another way" "./deck.yaml: output.trace is the deck file" \
  train deck.yaml train.steps=2 checkpoint.dir=ck1 output.report= output.trace=./deck.yaml
cmp -s deck.yaml deck.orig || fail "the deck was changed"
head -c 4000 deck.yaml > corpus.txt
refused "output.report = the data file" "corpus.txt: output.report is the data file (data.path)" \
  train deck.yaml train.steps=2 checkpoint.dir=ck1 data.source=text data.path=corpus.txt model.vocab=256 \
  output.report=corpus.txt
refused "output.report = output.trace" "r.json: output.trace is also output.report" \
  train deck.yaml train.steps=2 checkpoint.dir=ck1 output.report=r.json output.trace=r.json

# A checkpoint to resume, then its pointer as the report.
timeout -s KILL 60 "$app" train deck.yaml train.steps=2 checkpoint.at_end=true checkpoint.dir=ck6 output.report= \
  > run.out 2> run.err || fail "the first run failed"
cp ck6/latest latest.orig
refused "output.report = latest" "ck6/latest: output.report is the checkpoint pointer 'latest' in checkpoint.dir=ck6" \
  train deck.yaml train.steps=4 resume=latest checkpoint.dir=ck6 output.report=ck6/latest
refused "output.report = a checkpoint" "ck6/step-00000002.h5: output.report is 'step-00000002.h5' in checkpoint.dir=ck6" \
  train deck.yaml train.steps=4 resume=latest checkpoint.dir=ck6 output.report=ck6/step-00000002.h5
cmp -s ck6/latest latest.orig || fail "latest was changed"

# Stale temporaries as links to files elsewhere: replaced, the targets untouched.
for v in a b c; do echo "precious $v" > ../outside/$v; done
mkdir ck8
ln -s ../outside/a r.json.tmp
ln -s ../../outside/b ck8/step-00000002.h5.tmp
ln -s ../../outside/c ck8/latest.tmp
timeout -s KILL 60 "$app" train deck.yaml train.steps=2 checkpoint.at_end=true checkpoint.dir=ck8 \
  output.report=r.json > run.out 2> run.err || fail "a run beside stale links failed"
for v in a b c; do
  [[ $(cat ../outside/$v) == "precious $v" ]] || fail "../outside/$v was written through a stale temporary link"
done
python3 -c "import json; json.load(open('r.json'))['fom']" || fail "no report"
[[ $(head -n 1 ck8/latest) == step-00000002.h5 && -f ck8/step-00000002.h5 && ! -L ck8/step-00000002.h5 ]] ||
  fail "the checkpoint was not saved as its own file"
"$app" ckpt verify ck8 > run.out 2> run.err || fail "the checkpoint does not verify"
echo "ok: stale temporary links are replaced, their targets untouched"
