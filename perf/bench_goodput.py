#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Goodput under injected node failures: measured ETTR against the planner's prediction.

The long form of the cluster_slurm_goodput test. For each host MTBF and each save mode
(blocking, asynchronous) it runs tests/cluster/slurm_goodput.sh: the default deck's
model as d2 across the two test hosts under their Slurm, hosts killed at random
(tests/cluster/goodput_soak.py), every start resuming from `latest`, every loss equal
to one uninterrupted run's (made once and shared by all points: saves do not change
losses). Prints one row per point and writes the rows as JSON; with --plot, ETTR against
host MTBF, measured points beside the planner's curve at the measured costs.

The prediction a point is judged by is at the failure rate that happened (kills over
running time); the rate that was set is printed beside it. A soak of a few minutes sees
a handful of failures, so the realised rate can differ from the set one by tens of
percent, which would swamp the comparison of the model with the measurement.

Needs the test cluster and its Slurm: scripts/start-cluster.sh, then
MINI5D_SLURM_DIR=$MINI5D_CLUSTER_DIR/slurm scripts/start-slurm.sh --cluster. The machine
must be otherwise idle (the hosts share its cores).
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def soak(a, work, mtbf, mode, seed, reference):
    env = dict(os.environ, SOAK_STEPS=str(a.steps), SOAK_EVERY=str(a.every), SOAK_MTBF_S=str(mtbf),
               SOAK_KILLS=str(a.max_kills), SOAK_SEED=str(seed), SOAK_DEADLINE_S=str(a.deadline),
               REF_TIMEOUT=str(a.deadline))
    if reference:
        env["SOAK_REFERENCE"] = reference
    cmd = [os.path.join(ROOT, "tests", "cluster", "slurm_goodput.sh"), work, a.planner, a.app,
           os.path.join(ROOT, "inputs"), f"checkpoint.async={'true' if mode == 'async' else 'false'}"]
    if a.every == "auto":  # Young's interval from the host MTBF the soak sets
        cmd.append(f"checkpoint.node_mtbf_hours={mtbf / 3600:.6g}")
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"FAIL: {' '.join(cmd)}\n{r.stdout[-3000:]}{r.stderr[-2000:]}")
    with open(os.path.join(work, "soak.json")) as f:
        return json.load(f)


def predicted_curve(planner, costs, mtbfs):
    out = []
    for m in mtbfs:
        arg = ",".join(f"{k}={v:.6g}" for k, v in dict(costs, node_mtbf_s=m).items())
        r = subprocess.run([planner, "--goodput", arg], capture_output=True, text=True, check=True)
        out.append(json.loads(r.stdout)["ettr"])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mtbf", default="200", help="host MTBFs in seconds of running time, comma-separated")
    ap.add_argument("--modes", default="sync,async")
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--every", default="auto", help="checkpoint.every (steps, or auto: Young's interval)")
    ap.add_argument("--max-kills", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--deadline", type=int, default=1500, help="seconds per point")
    ap.add_argument("--work", default="/tmp/mini5d-bench-goodput")
    ap.add_argument("--app", default=os.path.join(ROOT, "build", "apps", "mini5d"))
    ap.add_argument("--planner", default=os.path.join(ROOT, "build", "apps", "mini5d-plan"))
    ap.add_argument("--bound", type=float, default=0.15, help="relative difference the comparison allows")
    ap.add_argument("--reference", default=None,
                    help="an uninterrupted run's report of the same deck and steps (skips making one)")
    ap.add_argument("--json", default=None, help="write the rows here")
    ap.add_argument("--rows", default=None, help="plot these rows (an earlier --json) instead of measuring")
    ap.add_argument("--plot", default=None, help="write ETTR against host MTBF here (PNG; needs matplotlib)")
    a = ap.parse_args()
    os.environ.setdefault("MINI5D_CLUSTER_DIR", "/tmp/mini5d-cluster")
    os.environ.setdefault("MINI5D_SLURM_DIR", os.path.join(os.environ["MINI5D_CLUSTER_DIR"], "slurm"))
    rows, reference = [], a.reference
    if a.rows:
        with open(a.rows) as f:
            rows = json.load(f)
    for mode in ([] if a.rows else a.modes.split(",")):
        for i, mtbf in enumerate(float(x) for x in a.mtbf.split(",")):
            work = os.path.join(a.work, f"{mode}-{mtbf:g}")
            s = soak(a, work, mtbf, mode, a.seed + i, reference)
            reference = reference or os.path.join(work, "ref.json")
            diff = s["ettr_measured"] / s["ettr_predicted_realised_rate"] - 1
            rows.append(dict(s, mode=mode, relative_difference=diff, within=abs(diff) <= a.bound))
            c = s["costs"]
            print(f"{mode:5} host MTBF {mtbf:5.0f} s set, {s['host_mtbf_realised_s']:5.0f} s happened: "
                  f"{s['kills']} kills, "
                  f"{s['saves']} saves, {s['steps_lost']} steps run twice; step {c['step_s'] * 1e3:.1f} ms, save "
                  f"{c['save_s']:.3f} s blocking (+{c['write_s']:.3f} s in the background), restart "
                  f"{c['restart_s']:.1f} s; ETTR {s['ettr_measured']:.3f} measured, "
                  f"{s['ettr_predicted_realised_rate']:.3f} predicted ({diff:+.1%}), "
                  f"{s['ettr_predicted']:.3f} at the set rate", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    if a.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(6, 4))
        for mode, colour in (("sync", "tab:blue"), ("async", "tab:orange")):
            pts = [r for r in rows if r["mode"] == mode]
            if not pts:
                continue
            lo = min(r["host_mtbf_realised_s"] for r in pts) * 0.5
            hi = max(r["host_mtbf_realised_s"] for r in pts) * 2
            grid = [lo * (hi / lo) ** (k / 40) for k in range(41)]
            ax.plot(grid, predicted_curve(a.planner, pts[0]["costs"], grid), color=colour,
                    label=f"{mode}: planner, at the measured costs")
            ax.scatter([r["host_mtbf_realised_s"] for r in pts], [r["ettr_measured"] for r in pts], color=colour,
                       label=f"{mode}: measured")
        ax.set_xscale("log")
        ax.set_xlabel("host MTBF, s (the failure rate that happened)")
        ax.set_ylabel("ETTR (useful step time / wall time)")
        ax.set_ylim(0, 1)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(a.plot, dpi=120)
    bad = [r for r in rows if not r["within"]]
    if bad:
        sys.exit(f"{len(bad)} of {len(rows)} points differ from the prediction by more than {a.bound:.0%}")


if __name__ == "__main__":
    main()
