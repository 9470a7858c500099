#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Verify and resume apply the same manifest check: a dataset added with h5py
# (/model/stray, float32 with a checksum, as a save would write it) and a dataset
# rewritten as float64 (same values, same checksum attribute) are refused by both, one
# line naming the dataset, exit 2. Resume used to train on both while verify refused
# them. Exit 77 (skipped) without a Python with h5py.
# usage: ckpt_manifest_resume.sh WORKDIR EXPECT_ERROR MINI5D_APP DECK
set -u
work=$1 expect=$2 app=$3 deck=$4
source "$(dirname "$0")/lib.sh"
need_h5py
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
tamper_setup "$app" "$deck"
# both EDIT MESSAGE: the edit on a fresh copy, then verify and a resume refuse with MESSAGE.
both() {
  tamper "$1"
  "$expect" "$f: $2" "$app" ckpt verify ck || exit 1
  "$expect" "$f: $2" "$app" train "$deck" train.steps=4 "${common[@]}" resume=latest || exit 1
}
both "d = f.create_dataset('model/stray', data=np.zeros(4, dtype='<f4')); d.attrs['checksum'] = np.uint64(0)" \
  "dataset /model/stray is not in the manifest"
both "a = f['model/wte'][...]; s = f['model/wte'].attrs['checksum']; del f['model/wte']
    d = f.create_dataset('model/wte', data=a.astype('<f8')); d.attrs['checksum'] = s" \
  "/model/wte is not float32 little-endian"
echo "ok: a stray dataset and a float64 one refused by verify and resume alike"
