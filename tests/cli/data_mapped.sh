#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A large text corpus is memory-mapped, not read into memory. A 4 GB
# sparse file (no disk used) trains 2 steps with a peak resident size far below the
# file's size (reading it whole took 5x the file in memory). Skips (77) where the
# file system cannot hold a sparse file of that size.
# usage: data_mapped.sh WORKDIR MINI5D_APP DECK
set -u
work=$1 app=$2 deck=$3
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
truncate -s 4G big.txt 2>/dev/null || { echo "SKIP: cannot create a 4 GB sparse file here"; exit 77; }
python3 - "$app" "$deck" <<'PY'
import resource, subprocess, sys
app, deck = sys.argv[1:3]
r = subprocess.run([app, "train", deck, "data.source=text", "data.path=big.txt", "model.vocab=256",
                    "train.steps=2", "output.report=", "checkpoint.dir=ck"], capture_output=True, text=True)
peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
if r.returncode != 0:
    sys.exit("FAIL: status %d: %s" % (r.returncode, r.stderr))
if "mapped" not in r.stdout:
    sys.exit("FAIL: the header does not describe the source as mapped")
if peak_mb > 512:
    sys.exit("FAIL: peak resident size %.0f MB for a 4096 MB corpus" % peak_mb)
print("ok: 4 GB corpus, peak resident size %.0f MB" % peak_mb)
PY
