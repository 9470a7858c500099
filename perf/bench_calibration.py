#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Calibrated planner against measured training: for each deck and rank
count, `mini5d calibrate` measures this machine into a cluster file, `mini5d-plan` predicts
the step time of the deck's data-parallel layout on it, and `mini5d train` measures that
step time (median of the steady steps, median over rounds). The table says how far the
prediction is off; the exit status is 1 when any row is beyond --bound (default 15%).

The 1-rank rows run on core 0 only (taskset), so that one rank owns one core as each of
the d = 2 ranks does; calibrate runs under exactly the same launch as train.

    perf/bench_calibration.py                # tiny and small, 1 rank and d = 2
    perf/bench_calibration.py --decks tiny --rounds 1 --json
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import yaml

import bench_util

ROOT = bench_util.ROOT


def calibrate(app, deck, ranks, pin, out, quick):
    """`mini5d calibrate` under the launch train gets (same pinning, same threads)."""
    cmd = (["taskset", "-c", "0"] if pin else []) + ["mpiexec", "-n", str(ranks), os.path.abspath(app),
                                                    "calibrate", os.path.abspath(deck), "--out", out]
    if quick:
        cmd.append("--quick")
    subprocess.run(cmd, check=True, env=bench_util.one_thread_env(), stdout=subprocess.DEVNULL,
                   cwd=os.path.dirname(out))


def predict(plan, deck, ranks, cluster):
    """The planner's step time for d = ranks at the deck's micro-batch."""
    with open(deck) as f:
        train = yaml.safe_load(f).get("train", {})
    mb, m = train.get("micro_batch", 8), train.get("accumulation", 1)
    cmd = [plan, "--model", deck, "--cluster", cluster, "--layout", f"d={ranks},mb={mb},m={m},zero=0",
           "--global-batch", str(mb * m * ranks), "--json"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    t = json.loads(out)["given"]["plan"]["time_s"]
    return t["step"], t


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--decks", default="tiny,small")
    ap.add_argument("--ranks", default="1,2")
    ap.add_argument("--app", default=os.path.join(ROOT, "build", "apps", "mini5d"))
    ap.add_argument("--plan", default=os.path.join(ROOT, "build", "apps", "mini5d-plan"))
    ap.add_argument("--steps", type=int, default=0, help="training steps (default: 200 tiny, 12 otherwise)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--bound", type=float, default=0.15)
    ap.add_argument("--quick", action="store_true", help="calibrate --quick (shorter timings)")
    ap.add_argument("--keep", help="folder to keep the calibrated cluster files in")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        where = os.path.abspath(a.keep) if a.keep else tmp
        os.makedirs(where, exist_ok=True)
        for name in a.decks.split(","):
            deck = os.path.join(ROOT, "inputs", name + ".yaml")
            steps = a.steps or (200 if name == "tiny" else 12)
            for ranks in (int(r) for r in a.ranks.split(",")):
                pin = ranks == 1
                cluster = os.path.join(where, f"calibrated-{name}-{ranks}.yaml")
                measured, predicted = [], []
                for _ in range(a.rounds):  # calibrate and train alternate: one noisy spell hits both
                    calibrate(a.app, deck, ranks, pin, cluster, a.quick)
                    predicted.append(predict(a.plan, deck, ranks, cluster)[0])
                    over = [f"parallel.d={ranks}", f"train.steps={steps}"]
                    rep = bench_util.train(a.app, deck, ranks, over, pin_core0=pin)
                    measured.append(bench_util.steady(rep, "seconds"))
                p, m = bench_util.median(predicted), bench_util.median(measured)
                rows.append({"deck": name, "ranks": ranks, "predicted_s": p, "measured_s": m,
                             "error": p / m - 1, "measured_rounds": measured, "predicted_rounds": predicted})
    worst = max(abs(r["error"]) for r in rows)
    if a.json:
        print(json.dumps({"rows": rows, "bound": a.bound, "worst": worst}, indent=1))
    else:
        print("| deck | layout | predicted step (ms) | measured step (ms) | error |")
        print("|---|---|---|---|---|")
        for r in rows:
            layout = "1 rank (1 core)" if r["ranks"] == 1 else f"d={r['ranks']}"
            print(f"| {r['deck']} | {layout} | {r['predicted_s'] * 1e3:.2f} | {r['measured_s'] * 1e3:.2f} | "
                  f"{r['error'] * 100:+.1f}% |")
        print(f"worst |error| {worst * 100:.1f}% (bound {a.bound * 100:.0f}%); medians of {a.rounds} round(s)")
    return 0 if worst <= a.bound else 1


if __name__ == "__main__":
    sys.exit(main())
