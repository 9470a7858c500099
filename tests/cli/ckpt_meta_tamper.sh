#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The root attributes resume trusts carry a checksum: an edited step or data cursor, a
# file renamed to another step and a file of format version 1 are refused by `ckpt
# verify` and by a resume alike, naming the file and the attribute.
# usage: ckpt_meta_tamper.sh WORKDIR EXPECT_ERROR CKPT_TOOL MINI5D_APP DECK
set -u
work=$1 expect=$2 tool=$3 app=$4 deck=$5
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
common=(checkpoint.dir=ck output.report=)
"$app" train "$deck" train.steps=4 checkpoint.at_end=true "${common[@]}" > first.out 2>&1 || { cat first.out; exit 1; }
f=ck/step-00000004.h5
cp $f pristine.h5
both() {  # both "message": verify and resume fail with it
  "$expect" "$1" "$app" ckpt verify $f || exit 1
  "$expect" "$1" "$app" train "$deck" train.steps=6 "${common[@]}" resume=latest || exit 1
}
"$tool" setattr $f step 2 || exit 1
both "$f: root attribute step fails its checksum (changed after the save)"
cp pristine.h5 $f && "$tool" setattr $f data_cursor 2 || exit 1
both "$f: root attribute data_cursor fails its checksum (changed after the save)"
cp pristine.h5 $f && "$tool" setattr $f format_version 1 || exit 1
both "$f: checkpoint format version 1 predates the metadata checksum"
mv pristine.h5 ck/step-00000002.h5
"$expect" "ck/step-00000002.h5: the file is named for step 2, its step attribute is 4" \
  "$app" ckpt verify ck/step-00000002.h5 || exit 1
echo "ok: edited step, data cursor, old format and a renamed file refused by verify and resume"
