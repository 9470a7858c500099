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

With --async, instead: the asynchronous-save target (checkpoint.async). A deck whose
blocking save lasts at least 5 steps (default: small's model at micro_batch 1 and
`--seq` 16, so a step is short next to its 355 MB save) runs `--steps` steps saving every
`--every`, three ways: no saves, blocking saves, asynchronous saves. A step overlaps a
background write when it starts before the write ends (the write starts right after
the step that triggered it, and its length is in the report); the target is the median
of those steps within 10% of the median step of the run without saves. Also printed:
the blocking part of each asynchronous save (the snapshot, plus any wait for the write)
against a blocking save. Ranks and OpenMP threads per rank are options: on a 2-core
machine 2 ranks leave the writer thread no core of its own.
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


def overlapping_steps(report):
    """Step seconds of the steps that overlap a background write, and of those that do not
    (the first two steps, warm-up, are left out of both), from an asynchronous run's report.
    A write starts after the step that triggered it; the steps after it overlap it until
    their summed time reaches the write's length (the last one partly)."""
    steps = report["steps"]
    overlapped = set()
    for c in report["checkpoints"]:
        if c["kind"] != "save":
            continue
        elapsed = 0.0
        for st in steps:
            if st["step"] <= c["step"]:
                continue
            if elapsed >= c["seconds"]:
                break
            overlapped.add(st["step"])
            elapsed += st["seconds"]
    overlap = [st["seconds"] for st in steps[2:] if st["step"] in overlapped]
    clear = [st["seconds"] for st in steps[2:] if st["step"] not in overlapped]
    return overlap, clear


def async_target(a):
    med = statistics.median
    # Two ranks split the model (t=2): a data-parallel pair would spend each step on the
    # all-reduce of every gradient, as long as the save, and no deck would pass the 5 steps.
    layout = ["parallel.t=2"] if a.ranks == 2 else []
    common = [f"train.steps={a.steps}", "train.micro_batch=1", f"model.seq={a.seq}", "checkpoint.keep=1",
              "checkpoint.dir=ck", "checkpoint.overwrite=true", "train.warmup=2"] + layout
    modes = {"none": [], "blocking": [f"checkpoint.every={a.every}"],
             "async": [f"checkpoint.every={a.every}", "checkpoint.async=true"]}
    got = {m: dict(steps=[], overlap=[], clear=[], save=[], snapshot=[], wait=[]) for m in modes}
    env = {"OMP_NUM_THREADS": str(a.threads), "OMP_PROC_BIND": "false"}
    os.environ.update(env)
    with tempfile.TemporaryDirectory(dir=a.dir) as tmp:
        for _ in range(a.rounds):
            for m, extra in modes.items():  # alternating, so drifts of the machine hit all three
                r = mini5d(a.app, a.deck, a.ranks, common + extra, tmp)
                g = got[m]
                g["steps"] += [st["seconds"] for st in r["steps"][2:]]
                saves = [c for c in r["checkpoints"] if c["kind"] == "save"]
                g["save"] += [c["seconds"] for c in saves]
                g["snapshot"] += [c.get("snapshot_seconds", 0) for c in saves]
                g["wait"] += [c.get("wait_seconds", 0) for c in saves]
                if m == "async":
                    o, c = overlapping_steps(r)
                    g["overlap"] += o
                    g["clear"] += c

    def spread(v, scale=1.0, f="{:.1f}"):
        return (f + " (" + f + "-" + f + ")").format(med(v) * scale, min(v) * scale, max(v) * scale)

    base = med(got["none"]["steps"])
    ratio = med(got["async"]["overlap"]) / base
    print(f"# asynchronous checkpoints, deck {os.path.relpath(a.deck, ROOT)} (micro_batch 1, seq {a.seq}), "
          f"{a.ranks} rank(s) x {a.threads} OpenMP thread(s), {a.steps} steps saving every {a.every}, "
          f"{a.rounds} rounds; median (min-max)")
    print(f"blocking save: {spread(got['blocking']['save'])} s = "
          f"{med(got['blocking']['save']) / base:.1f} steps of {base * 1e3:.1f} ms")
    print("| steps | n | step ms | vs no saves |")
    print("|---|---|---|---|")
    for name, v in [("no saves", got["none"]["steps"]), ("blocking saves (all steps)", got["blocking"]["steps"]),
                    ("async: steps overlapping a write", got["async"]["overlap"]),
                    ("async: steps with no write", got["async"]["clear"])]:
        print(f"| {name} | {len(v)} | {spread(v, 1e3)} | {med(v) / base:.3f} |")
    print(f"async write (background): {spread(got['async']['save'])} s; blocking part: snapshot "
          f"{spread(got['async']['snapshot'], 1e3)} ms, wait for the write {spread(got['async']['wait'], 1e3)} ms "
          f"(the last save's wait is the end of the run's)")
    print(f"target (overlapping / no saves <= 1.10): {ratio:.3f} {'met' if ratio <= 1.10 else 'NOT met'}")
    if a.json:
        print("JSON " + json.dumps(dict(ratio=ratio, base_s=base, **got)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--deck", default=os.path.join(ROOT, "inputs", "small.yaml"))
    ap.add_argument("--app", default=os.path.join(ROOT, "build", "apps", "mini5d"))
    ap.add_argument("--dir", default=None, help="where to write (default: a temporary directory)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--async", dest="async_target", action="store_true",
                    help="the asynchronous-save target instead of the bandwidth table")
    ap.add_argument("--ranks", type=int, choices=(1, 2), default=2, help="--async: ranks (t=2 at 2)")
    ap.add_argument("--threads", type=int, default=1, help="--async: OpenMP threads per rank")
    ap.add_argument("--steps", type=int, default=60, help="--async: steps per run")
    ap.add_argument("--every", type=int, default=15, help="--async: steps between saves")
    ap.add_argument("--seq", type=int, default=16, help="--async: sequence length (short: cheap steps)")
    a = ap.parse_args()
    if a.rounds < 3:
        ap.error("--rounds must be at least 3")
    if a.async_target:
        return async_target(a)
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
