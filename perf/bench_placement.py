#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Placement measured on the two-tier test cluster (scripts/start-cluster.sh), beside the
planner's prediction: on 2 hosts x 2 ranks, each layout runs with its chatty axis inside
the hosts (block mapping: consecutive ranks on one host) and across them (cyclic mapping:
rank r on host r mod 2, parallel.force_placement=true), in alternating rounds so that
drifts of the machine's load hit both alike. Per layout and placement it prints the
measured step (median and min-max over the rounds), `mini5d-plan --layout ...,map=block|cyclic`'s
step for the same deck on the cluster file (the testbed's by default), the error, the
exposed communication per axis (median share of the step) and the bytes per step of
each axis with the tier it crossed (from the start-up header's placement table). Per
axis it then says whether the planner orders the two placements as measured, and at
the end the worst error.

The decks are tiny's and moe-tiny's blocks made wider, deeper and longer (d_model 128,
8 layers, seq 256), so that a step takes about a second on the testbed and the chatty
axis moves far more bytes than d: the comparison placement is about.

By default the planner predicts with a cluster file that `mini5d calibrate` writes on the
running test hosts first (about 80 s): both real tiers, and the GEMM rates of 4 ranks
sharing 2 cores. --cluster FILE skips that (inputs/clusters/testbed-2tier.yaml is the
hand-written file: its link is the shaped rate, not what two ranks sharing it get).

usage: perf/bench_placement.py [--rounds N] [--steps N] [--app PATH] [--plan PATH]
                               [--cluster FILE] [--only AXES] [--json FILE]
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

import yaml

from bench_util import ROOT, median, one_thread_env

# The block every layout trains: tiny's (moe-tiny's for e) at a size whose step takes
# about a second on 4 ranks sharing 2 cores.
MODEL = {"d_model": 128, "layers": 8, "seq": 256, "ffn": 512}
# axis -> (deck, parallel degrees, micro_batch, accumulation): each a 4-rank layout with
# d = 2 and the axis at 2, global batch 32 sequences.
LAYOUTS = {
    "t": ("inputs/tiny.yaml", {"t": 2, "d": 2}, 16, 1),
    "e": ("inputs/moe-tiny.yaml", {"e": 2, "d": 2}, 8, 1),
    "c": ("inputs/tiny.yaml", {"c": 2, "d": 2}, 16, 1),
    "p": ("inputs/tiny.yaml", {"p": 2, "d": 2}, 8, 2),
}
GRACE_S = 15  # after the report: MPICH/UCX 1.13 over TCP could hang in MPI_Finalize (a safety net:
#               cluster-mpiexec.sh now preloads a fix, docs/two-tier-cluster.md)


def write_deck(axis, steps, tmp):
    """The axis's deck with the benchmark's model, layout and steps; returns its path."""
    base, degrees, mb, acc = LAYOUTS[axis]
    with open(os.path.join(ROOT, base)) as f:
        deck = yaml.safe_load(f)
    deck["model"].update(MODEL)
    deck["parallel"].update(degrees)
    deck["train"].update(micro_batch=mb, accumulation=acc, steps=steps)
    deck["output"]["log_every"] = 1000
    path = os.path.join(tmp, f"{axis}.yaml")
    with open(path, "w") as f:
        yaml.safe_dump(deck, f, sort_keys=False)
    return path


def predict(plan, cluster, deck, axis, mapping):
    """mini5d-plan's step (seconds) and exposed communication per axis for the deck's
    layout under `mapping`."""
    _, degrees, mb, acc = LAYOUTS[axis]
    spec = ",".join(f"{k}={v}" for k, v in degrees.items()) + f",mb={mb},m={acc},map={mapping}"
    cmd = [plan, "--model", deck, "--cluster", cluster, "--layout", spec, "--allow-cross-node-tp", "--json"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"bench_placement: {' '.join(cmd)} failed:\n{r.stderr}")
    t = json.loads(r.stdout)["given"]["plan"]["time_s"]
    return t["step"], t["exposed"]


def calibrate(app, json_path):
    """`mini5d calibrate` on 2 hosts x 2 ranks with the t layout's deck (its GEMM shapes,
    both real tiers, the cores shared as in the runs); returns the cluster file."""
    out = (os.path.splitext(json_path)[0] + "-cluster.yaml") if json_path else \
        os.path.join(tempfile.mkdtemp(prefix="bench_placement-"), "cluster.yaml")
    with tempfile.TemporaryDirectory() as tmp:
        deck = write_deck("t", 3, tmp)
        cmd = [os.path.join(ROOT, "scripts/cluster-mpiexec.sh"), "2", "2", app, "calibrate", deck, "--out", out]
        r = subprocess.run(cmd, env=dict(one_thread_env(), MINI5D_NO_BIND="1"), cwd=tmp, capture_output=True,
                           text=True, timeout=900)
    if r.returncode or not os.path.exists(out):
        sys.exit(f"bench_placement: {' '.join(cmd)} failed:\n{(r.stdout + r.stderr)[-2000:]}")
    for line in r.stdout.splitlines():
        if re.match(r"calibrate: (inside|across|sgemm)", line):
            print(line)
    print(f"planner's cluster file: {out}\n")
    return out


def run(app, deck, mapping, tmp):
    """One run across the hosts; returns (report, stdout). Ends a job that hangs in
    MPI_Finalize after writing its report (docs/two-tier-cluster.md)."""
    report = os.path.join(tmp, "report.json")
    if os.path.exists(report):
        os.remove(report)
    env = dict(one_thread_env(), MINI5D_NO_BIND="1", MINI5D_CLUSTER_MAP=mapping)
    cmd = [os.path.join(ROOT, "scripts/cluster-mpiexec.sh"), "2", "2", app, "train", deck,
           f"output.report={report}", f"checkpoint.dir={tmp}/ck", "parallel.force_placement=true"]
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
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--app", default=os.path.join(ROOT, "build/apps/mini5d"))
    ap.add_argument("--plan", default=os.path.join(ROOT, "build/apps/mini5d-plan"))
    ap.add_argument("--cluster", help="cluster file the planner predicts with (default: `mini5d calibrate` "
                    "on the test hosts with the t layout's deck, written beside --json or to a temporary file)")
    ap.add_argument("--only", default="tecp", help="axes to compare, e.g. tp")
    ap.add_argument("--json", help="also write the rows to this file")
    a = ap.parse_args()
    status = os.path.join(os.environ.get("MINI5D_CLUSTER_DIR", "/tmp/mini5d-cluster"), "status")
    if not os.path.exists(status) or open(status).read().strip() != "up":
        sys.exit("bench_placement: the test cluster is not up (scripts/start-cluster.sh 2)")
    if a.rounds < 3 or a.steps < 3 or not set(a.only) <= set(LAYOUTS):
        sys.exit("bench_placement: --rounds >= 3, --steps >= 3, --only of t, e, c, p")
    if not a.cluster:
        a.cluster = calibrate(a.app, a.json)
    print(f"| layout | chatty axis | step s, measured median (min-max, {a.rounds} rounds) | predicted | error "
          f"| exposed comm per axis, measured (predicted) | bytes per step by axis (tier) |")
    print("|---|---|---|---|---|---|---|")
    rows, verdicts = [], []
    for axis in a.only:
        results = {"block": [], "cyclic": []}
        with tempfile.TemporaryDirectory() as tmp:
            deck = write_deck(axis, a.steps, tmp)
            predicted = {m: predict(a.plan, a.cluster, deck, axis, m) for m in results}
            for _ in range(a.rounds):
                for mapping in results:
                    results[mapping].append(run(a.app, deck, mapping, tmp))
        step_of = {}
        for mapping, runs in results.items():
            per_round = [median([s["seconds"] for s in r["steps"][1:]]) for r, _ in runs]
            steps = [s for r, _ in runs for s in r["steps"][1:]]
            axes = sorted({k for s in steps for k in s.get("exposed_by_axis", {})})
            pred_step, pred_exposed = predicted[mapping]
            exposed = ", ".join(
                f"{k} {100 * median([s['exposed_by_axis'].get(k, 0) / s['seconds'] for s in steps]):.0f}%"
                + (f" ({100 * pred_exposed[k] / pred_step:.0f}%)" if k in pred_exposed else "")
                for k in axes)
            tier = tiers(runs[0][1])
            moved = ", ".join(f"{k} {v['measured']} ({tier.get(k[0], '?')})"
                              for k, v in runs[0][0]["bytes_per_step"].items() if v["measured"])
            where = "inside" if tier.get(axis) == "intra-node" else "across"
            measured = median(per_round)
            error = measured / pred_step - 1
            step_of[where] = (measured, pred_step)
            rows.append({"axis": axis, "placement": where, "mapping": mapping, "measured_s": per_round,
                         "predicted_s": pred_step, "error": error})
            print(f"| {axis}2 d2 | {axis} {where} | {measured:.3f} ({min(per_round):.3f}-{max(per_round):.3f}) "
                  f"| {pred_step:.3f} | {100 * error:+.1f}% | {exposed} | {moved} |")
        (mi, pi), (ma, pa) = step_of["inside"], step_of["across"]
        alike = (ma > mi) == (pa > pi)
        verdicts.append(alike)
        print(f"|  | {axis}: across/inside measured {ma / mi:.2f}, predicted {pa / pi:.2f}: "
              f"{'ordered alike' if alike else 'ORDERED DIFFERENTLY'} |  |  |  |  |  |")
        sys.stdout.flush()
    worst = max(rows, key=lambda r: abs(r["error"]))
    print(f"\npairs ordered alike: {sum(verdicts)} of {len(verdicts)}; worst error {100 * worst['error']:+.1f}% "
          f"({worst['axis']} {worst['placement']}); error = measured step / predicted - 1")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"cluster": a.cluster, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
