#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Checkpoint bandwidth: mini5d's parallel-HDF5 save and load vs a plain write and read.

One run, one table. For the deck (default inputs/small.yaml) at 1 rank and at
2 ranks (d=2, ZeRO 1): save a checkpoint of the initial state (train.steps=0 with
checkpoint.at_end: weights and both AdamW moments, 12 bytes per parameter), then resume
from it (a load that verifies every checksum). Next to each, a plain sequential write
of the same number of bytes to the same directory with dd (8 MiB blocks, conv=fsync, as
the save fsyncs; the time includes starting dd) and a plain read of it back.
Bandwidths are the checkpoint file's size over the wall time of the slowest rank;
reads come from the page cache on both sides, as they would right after a save. This
machine's page-cache writes vary from run to run (0.3-1.5 GB/s for the same dd), so
save and plain write alternate `--rounds` times and the medians are compared.
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def mini5d(app, deck, ranks, overrides, cwd):
    report = os.path.join(cwd, "report.json")
    cmd = ["mpiexec", "-n", str(ranks), app, "train", deck, f"output.report={report}",
           "output.log_every=1000"] + overrides
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL, cwd=cwd)
    with open(report) as f:
        return json.load(f)


def plain_write_read(path, nbytes):
    """dd, the usual baseline: nbytes in 8 MiB blocks, fsync'd (conv=fsync), then read."""
    count = (nbytes + (8 << 20) - 1) >> 23
    t0 = time.perf_counter()
    subprocess.run(["dd", "if=/dev/zero", f"of={path}", "bs=8M", f"count={count}", "conv=fsync"],
                   check=True, capture_output=True)
    write_s = (time.perf_counter() - t0) * nbytes / (count << 23)
    t0 = time.perf_counter()
    subprocess.run(["dd", f"if={path}", "of=/dev/null", "bs=8M"], check=True, capture_output=True)
    read_s = (time.perf_counter() - t0) * nbytes / (count << 23)
    os.remove(path)
    return write_s, read_s


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--deck", default=os.path.join(ROOT, "inputs", "small.yaml"))
    ap.add_argument("--app", default=os.path.join(ROOT, "build", "apps", "mini5d"))
    ap.add_argument("--dir", default=None, help="where to write (default: a temporary directory)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    if a.rounds < 3:
        ap.error("--rounds must be at least 3")
    rows = []
    med = statistics.median
    with tempfile.TemporaryDirectory(dir=a.dir) as tmp:
        for ranks, layout in [(1, []), (2, ["parallel.d=2", "parallel.zero=1", "train.micro_batch=4"])]:
            work = os.path.join(tmp, f"np{ranks}")
            os.makedirs(work)
            common = ["train.steps=0", "checkpoint.dir=ck", "checkpoint.keep=1"] + layout
            if ranks == 1:
                common.append("train.micro_batch=8")
            save_s, load_s, write_s, read_s = [], [], [], []
            for _ in range(a.rounds):
                # Each round is a fresh run in the same directory: overwrite the last one.
                saved = mini5d(a.app, a.deck, ranks, common + ["checkpoint.at_end=true", "checkpoint.overwrite=true"], work)
                save = [c for c in saved["checkpoints"] if c["kind"] == "save"][-1]
                loaded = mini5d(a.app, a.deck, ranks, common + ["resume=latest"], work)
                load = [c for c in loaded["checkpoints"] if c["kind"] == "load"][-1]
                size = os.path.getsize(os.path.join(work, save["path"]))
                w, r = plain_write_read(os.path.join(work, "plain.bin"), size)
                save_s.append(save["seconds"]), load_s.append(load["seconds"])
                write_s.append(w), read_s.append(r)
            rows.append(dict(ranks=ranks, bytes=size, save_s=med(save_s), load_s=med(load_s),
                             plain_write_s=med(write_s), plain_read_s=med(read_s),
                             rounds=dict(save_s=save_s, load_s=load_s, plain_write_s=write_s, plain_read_s=read_s)))
    mb = 1e6
    print(f"# checkpoint bandwidth, deck {os.path.relpath(a.deck, ROOT)}, median (min-max) of {a.rounds} "
          "alternating rounds (MB/s = 1e6 bytes/s of the file)")
    print("| ranks | file MB | save MB/s | plain write MB/s | save/plain | load MB/s | plain read MB/s | load/plain |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        sw, pw = r["bytes"] / r["save_s"] / mb, r["bytes"] / r["plain_write_s"] / mb
        sl, pr = r["bytes"] / r["load_s"] / mb, r["bytes"] / r["plain_read_s"] / mb
        r.update(save_mbps=sw, plain_write_mbps=pw, load_mbps=sl, plain_read_mbps=pr)
        def rate(key):  # median (min-max) MB/s over the rounds
            v = [r["bytes"] / t / mb for t in r["rounds"][key]]
            return f"{med(v):.0f} ({min(v):.0f}-{max(v):.0f})"
        print(f"| {r['ranks']} | {r['bytes'] / mb:.1f} | {rate('save_s')} | {rate('plain_write_s')} | {sw / pw:.2f} | "
              f"{rate('load_s')} | {rate('plain_read_s')} | {sl / pr:.2f} |")
    if a.json:
        print("JSON " + json.dumps(rows))


if __name__ == "__main__":
    main()
