#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Checkpoint bandwidth: mini5d's parallel-HDF5 save and load vs a plain write and read.

One run, one table (issue 5). For the deck (default inputs/small.yaml) at 1 rank and at
2 ranks (d=2, ZeRO 1): train one step and save a checkpoint (weights and both AdamW
moments, 12 bytes per parameter), then resume from it (a load that verifies every
checksum). Next to each, a plain sequential write of the same number of bytes to the
same directory (one file, 8 MiB writes, fsync, as the save fsyncs) and a plain read of
it back. Bandwidths are the checkpoint file's size over the wall time of the slowest
rank; reads come from the page cache on both sides, as they would right after a save.
"""
import argparse
import json
import os
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
    block = os.urandom(8 << 20)
    t0 = time.perf_counter()
    with open(path, "wb") as f:
        left = nbytes
        while left > 0:
            n = min(left, len(block))
            f.write(block[:n])
            left -= n
        f.flush()
        os.fsync(f.fileno())
    dirfd = os.open(os.path.dirname(path), os.O_RDONLY)
    os.fsync(dirfd)
    os.close(dirfd)
    write_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    with open(path, "rb") as f:
        while f.read(8 << 20):
            pass
    read_s = time.perf_counter() - t0
    os.remove(path)
    return write_s, read_s


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--deck", default=os.path.join(ROOT, "inputs", "small.yaml"))
    ap.add_argument("--app", default=os.path.join(ROOT, "build", "apps", "mini5d"))
    ap.add_argument("--dir", default=None, help="where to write (default: a temporary directory)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(dir=a.dir) as tmp:
        for ranks, layout in [(1, []), (2, ["parallel.d=2", "parallel.zero=1", "train.micro_batch=4"])]:
            work = os.path.join(tmp, f"np{ranks}")
            os.makedirs(work)
            common = ["train.steps=1", "checkpoint.dir=ck", "checkpoint.keep=1"] + layout
            if ranks == 1:
                common.append("train.micro_batch=8")
            saved = mini5d(a.app, a.deck, ranks, common + ["checkpoint.at_end=true"], work)
            save = [c for c in saved["checkpoints"] if c["kind"] == "save"][-1]
            loaded = mini5d(a.app, a.deck, ranks, common + ["resume=latest"], work)
            load = [c for c in loaded["checkpoints"] if c["kind"] == "load"][-1]
            size = os.path.getsize(os.path.join(work, save["path"]))
            write_s, read_s = plain_write_read(os.path.join(work, "plain.bin"), size)
            rows.append(dict(ranks=ranks, bytes=size, save_s=save["seconds"], load_s=load["seconds"],
                             plain_write_s=write_s, plain_read_s=read_s))
    mb = 1e6
    print(f"# checkpoint bandwidth, deck {os.path.relpath(a.deck, ROOT)} (MB/s = 1e6 bytes/s of the file)")
    print("| ranks | file MB | save MB/s | plain write MB/s | save/plain | load MB/s | plain read MB/s | load/plain |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        sw, pw = r["bytes"] / r["save_s"] / mb, r["bytes"] / r["plain_write_s"] / mb
        sl, pr = r["bytes"] / r["load_s"] / mb, r["bytes"] / r["plain_read_s"] / mb
        r.update(save_mbps=sw, plain_write_mbps=pw, load_mbps=sl, plain_read_mbps=pr)
        print(f"| {r['ranks']} | {r['bytes'] / mb:.1f} | {sw:.0f} | {pw:.0f} | {sw / pw:.2f} | {sl:.0f} | {pr:.0f} | {sl / pr:.2f} |")
    if a.json:
        print("JSON " + json.dumps(rows))


if __name__ == "__main__":
    main()
