#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# `mini5d ckpt info` and `verify` under mpiexec, and the file as h5dump sees it:
# datasets grouped by module with the root and checksum attributes.
# usage: ckpt_inspect.sh WORKDIR MPIEXEC NP_FLAG CKPT_TOOL MINI5D_APP
set -u
work=$1 mpiexec=$2 npflag=$3 tool=$4 app=$5
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
"$mpiexec" "$npflag" 2 "$tool" write ck step-00000004 4 44 0 || fail "save"

info=$("$mpiexec" "$npflag" 2 "$app" ckpt info ck) || fail "ckpt info: status $?"
echo "$info"
for want in "checkpoint   ck/step-00000004.h5" "format       2" "step         4" "tokens seen  4000" \
            'layout       {"d":2,"t":1,"p":1,"c":1,"e":1,"zero":1}' "seeds        train 44, data 45" \
            "data cursor  4" "extra        writer = ckpt_test" "  model:" \
            "/optimizer/exp_avg_sq/blocks/0/moe/experts/weight  [3, 24, 10]" \
            "total        21 datasets, 56940 bytes"; do
  grep -qF -- "$want" <<<"$info" || fail "ckpt info lacks: $want"
done
[[ $(grep -c "checkpoint   " <<<"$info") -eq 1 ]] || fail "ckpt info printed more than once"
# Natural order: blocks/0 before blocks/10.
grep -n "/model/blocks/" <<<"$info" | head -1 | grep -q "blocks/0/" || fail "datasets not in natural order"
out=$("$mpiexec" "$npflag" 2 "$app" ckpt verify ck/step-00000004.h5) || fail "ckpt verify: status $?"
[[ $out == "ck/step-00000004.h5: OK, 21 datasets verified" ]] || fail "verify said: $out"

dump=$(h5dump -H ck/step-00000004.h5) || fail "h5dump"
for want in 'GROUP "model"' 'GROUP "optimizer"' 'GROUP "exp_avg"' 'DATASET "weight"' 'DATASET "wte"' \
            'ATTRIBUTE "format_version"' 'ATTRIBUTE "step"' 'ATTRIBUTE "tokens_seen"' 'ATTRIBUTE "deck"' \
            'ATTRIBUTE "layout"' 'ATTRIBUTE "train_seed"' 'ATTRIBUTE "data_seed"' 'ATTRIBUTE "data_cursor"' \
            'ATTRIBUTE "extra.writer"' 'ATTRIBUTE "checksum"' 'H5T_IEEE_F32LE' 'SIMPLE { ( 37, 24 ) / ( 37, 24 ) }'; do
  grep -qF -- "$want" <<<"$dump" || fail "h5dump -H lacks: $want"
done
echo "ok: ckpt info, ckpt verify, h5dump"
