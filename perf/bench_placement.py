#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Placement measured on the two-tier test cluster (scripts/start-cluster.sh): on 2 hosts x
2 ranks, each layout runs with its chatty axis inside the hosts (block mapping:
consecutive ranks on one host) and across them (cyclic mapping: rank r on host r mod 2,
parallel.force_placement=true), in alternating rounds so that drifts of the machine's
load hit both alike. Per layout and placement it prints tokens/s (median and min-max
over the rounds), the exposed communication per axis (median share of the step) and
the bytes per step of each axis with the tier it crossed (from the start-up header's
placement table).

Not measured here: the planner's predicted step for the same placement (the planner
assumes block mapping, so it has no "across" variant of t, e, c or p on 2 ranks per node).

usage: perf/bench_placement.py [--rounds N] [--steps N] [--app PATH] [--only AXES]
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

from bench_util import ROOT, median, one_thread_env

# axis -> (deck, overrides): each a 4-rank layout with d = 2 and the axis at 2.
LAYOUTS = {
    "t": ("inputs/tiny.yaml", ["parallel.t=2", "parallel.d=2", "train.micro_batch=8"]),
    "e": ("inputs/moe-tiny.yaml", ["parallel.e=2", "parallel.d=2", "train.micro_batch=4"]),
    "c": ("inputs/tiny.yaml", ["parallel.c=2", "parallel.d=2", "train.micro_batch=8"]),
    "p": ("inputs/tiny.yaml", ["parallel.p=2", "parallel.d=2", "train.micro_batch=4", "train.accumulation=2"]),
}
GRACE_S = 15  # after the report: MPICH/UCX 1.13 over TCP could hang in MPI_Finalize (a safety net:
#               cluster-mpiexec.sh now preloads a fix, docs/two-tier-cluster.md)


def run(app, deck, overrides, mapping, steps, tmp):
    """One run across the hosts; returns (report, stdout). Ends a job that hangs in
    MPI_Finalize after writing its report (docs/two-tier-cluster.md)."""
    report = os.path.join(tmp, "report.json")
    if os.path.exists(report):
        os.remove(report)
    env = dict(one_thread_env(), MINI5D_NO_BIND="1", MINI5D_CLUSTER_MAP=mapping)
    cmd = [os.path.join(ROOT, "scripts/cluster-mpiexec.sh"), "2", "2", app, "train", os.path.join(ROOT, deck),
           f"train.steps={steps}", f"output.report={report}", f"checkpoint.dir={tmp}/ck",
           "parallel.force_placement=true"] + overrides
    log = open(os.path.join(tmp, "log"), "w+")
    p = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=tmp, start_new_session=True)
    done_at, t0 = None, time.time()
    while p.poll() is None:
        if done_at is None and os.path.exists(report) and os.path.getsize(report) > 0:
            done_at = time.time()
        if (done_at and time.time() - done_at > GRACE_S) or time.time() - t0 > 600:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            break
        time.sleep(0.2)
    log.seek(0)
    out = log.read()
    log.close()
    if not os.path.exists(report):
        sys.exit(f"bench_placement: {' '.join(cmd)} wrote no report:\n{out[-2000:]}")
    with open(report) as f:
        return json.load(f), out


def tiers(out):
    """axis -> 'intra-node' / 'inter-node' / '-' from the header's placement table."""
    t = {}
    for m in re.finditer(r"^  (t|e|c|p|d) +\w+ +\d+ +\d+ +(intra-node|inter-node|-)", out, re.M):
        t[m.group(1)] = m.group(2)
    return t


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--app", default=os.path.join(ROOT, "build/apps/mini5d"))
    ap.add_argument("--only", default="tecp", help="axes to compare, e.g. tp")
    a = ap.parse_args()
    status = os.path.join(os.environ.get("MINI5D_CLUSTER_DIR", "/tmp/mini5d-cluster"), "status")
    if not os.path.exists(status) or open(status).read().strip() != "up":
        sys.exit("bench_placement: the test cluster is not up (scripts/start-cluster.sh 2)")
    if a.rounds < 3 or a.steps < 3 or not set(a.only) <= set(LAYOUTS):
        sys.exit("bench_placement: --rounds >= 3, --steps >= 3, --only of t, e, c, p")
    print(f"| layout | chatty axis | tokens/s median (min-max, {a.rounds} rounds) | exposed comm per axis "
          f"| bytes per step by axis (tier) |")
    print("|---|---|---|---|---|")
    for axis in a.only:
        deck, ov = LAYOUTS[axis]
        results = {"block": [], "cyclic": []}
        with tempfile.TemporaryDirectory() as tmp:
            for _ in range(a.rounds):
                for mapping in ("block", "cyclic"):
                    results[mapping].append(run(a.app, deck, ov, mapping, a.steps, tmp))
        for mapping, runs in results.items():
            tps = [r["fom"]["tokens_per_s"] for r, _ in runs]
            steps = [s for r, _ in runs for s in r["steps"][1:]]
            axes = sorted({k for s in steps for k in s.get("exposed_by_axis", {})})
            exposed = ", ".join(
                f"{k} {100 * median([s['exposed_by_axis'].get(k, 0) / s['seconds'] for s in steps]):.0f}%"
                for k in axes)
            tier = tiers(runs[0][1])
            moved = ", ".join(f"{k} {v['measured']} ({tier.get(k[0], '?')})"
                              for k, v in runs[0][0]["bytes_per_step"].items() if v["measured"])
            where = "inside" if tier.get(axis) == "intra-node" else "across"
            print(f"| {axis}2 d2 | {axis} {where} | {median(tps):.0f} ({min(tps):.0f}-{max(tps):.0f}) "
                  f"| {exposed} | {moved} |")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
