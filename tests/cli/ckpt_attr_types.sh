#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Root and dataset attributes of another shape or type than mini5d writes, set with
# h5py: an integer array as format_version, a 4000-element or a two-element step, a
# string step, fixed- and variable-length string arrays as the deck, an integer array as
# an extra.* string, an array as a dataset's checksum. Each is refused by `ckpt verify`,
# `ckpt info` (root attributes) and a resume alike, one line naming the file and the attribute, exit 2.
# They used to crash (signal 11, malloc's "corrupted top size") or, for step=[2,2], be
# verified and resumed. Exit 77 (skipped) without a Python with h5py.
# usage: ckpt_attr_types.sh WORKDIR EXPECT_ERROR MINI5D_APP DECK
set -u
work=$1 expect=$2 app=$3 deck=$4
source "$(dirname "$0")/lib.sh"
need_h5py
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
tamper_setup "$app" "$deck"
# case ATTRIBUTE-EXPRESSION MESSAGE [no-info]: sets it on a fresh copy with h5py, then
# verify, info (unless no-info: info lists a dataset's checksum without trusting it) and
# a resume must each refuse with MESSAGE.
case_() {
  tamper "$1"
  "$expect" "$f: $2" "$app" ckpt verify ck || exit 1
  [[ ${3:-} == no-info ]] || "$expect" "$f: $2" "$app" ckpt info $f || exit 1
  "$expect" "$f: $2" "$app" train "$deck" train.steps=4 "${common[@]}" resume=latest || exit 1
}
case_ "f.attrs['format_version'] = [2, 2, 2]" "root attribute format_version is an array of 3 values, not a scalar"
case_ "f.attrs['step'] = np.arange(4000)" "root attribute step is an array of 4000 values, not a scalar"
case_ "f.attrs['step'] = [2, 2]" "root attribute step is an array of 2 values, not a scalar"
case_ "f.attrs['step'] = '2'" "root attribute step is a string, not an integer"
case_ "f.attrs['deck'] = np.array([b'a: 1', b'b: 2'])" "root attribute deck is an array of 2 values, not a scalar"
case_ "f.attrs.create('deck', ['a', 'b'], dtype=h5py.string_dtype())" \
  "root attribute deck is an array of 2 values, not a scalar"
case_ "f.attrs['extra.tokens_per_step'] = [1, 2]" "root attribute extra.tokens_per_step is an integer, not a string"
case_ "f['model/wte'].attrs['checksum'] = np.array([1, 2], dtype=np.uint64)" \
  "dataset /model/wte: its checksum attribute is an array of 2 values, not a scalar" no-info
echo "ok: attributes of another shape or type refused by verify, info and resume"
