#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Pipeline benchmark: p=2 on 2 cores against 1 rank, GPipe / 1F1B / interleaved, m = 2..16.

One run, one table, on the small deck (8 layers) with a global batch of
--batch sequences per step cut into m micro-batches (micro_batch = batch / m):
  * tokens/s of p=2 (one core per rank) against 1 rank on one core with the same
    micro-batches, and the speed-up target 0.95 x 2 x (1 - formula bubble);
  * the bubble measured on each stage (its idle share of the slowest stage's step,
    from the executor's action and wait timestamps, mean over steps 2..n) beside the
    formula (p-1)/(m+p-1), or (p-1)/(v*m+p-1) interleaved with v = 2;
  * the peak activation MiB per stage, measured (the model's activation sets, sized
    from the schedule) and predicted by the planner (in-flight micro-batches x one
    micro-batch's activations of the stage).
It also writes the Gantt chart of one run (1F1B, m = 8) with perf/plot_pipeline.py.

The 1-rank run is confined to core 0 with taskset. BLAS threads = 1. Each run reports
the median of its steps 2..n; figures are medians over --rounds alternating rounds.
"""
import json
import os
import subprocess
import sys
import tempfile

from bench_util import ROOT, bench_parser, median, steady, train


def plot(trace, png):
    """perf/plot_pipeline.py with a Python that has matplotlib (Debian's, if this one lacks it)."""
    for py in (sys.executable, "/usr/bin/python3"):
        if subprocess.run([py, "-c", "import matplotlib"], capture_output=True).returncode == 0:
            subprocess.run([py, os.path.join(ROOT, "perf", "plot_pipeline.py"), trace, png, "--title",
                            "mini5d small deck, p=2, 1F1B, m=8 (one step)"], check=True)
            return True
    print("(no matplotlib: Gantt chart skipped; scripts/setup-debian.sh --bench installs it)")
    return False


def main():
    ap = bench_parser(__doc__, "small.yaml", 4, 2)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--ms", default="2,4,8,16")
    ap.add_argument("--png", default=os.path.join(ROOT, "perf", "pipeline_gantt.png"))
    a = ap.parse_args()
    ms = [int(x) for x in a.ms.split(",")]
    schedules = [("gpipe", 1), ("1f1b", 1), ("interleaved", 2)]
    common = [f"train.steps={a.steps}"]
    runs = []  # (m, name, ranks, overrides, pin)
    for m in ms:
        mb = [f"train.micro_batch={a.batch // m}", f"train.accumulation={m}"]
        runs.append((m, "1 rank", 1, common + mb, True))
        for s, v in schedules:
            runs.append((m, s, 2, common + mb + ["parallel.p=2", f"parallel.schedule={s}",
                                                 f"parallel.virtual_stages={v}"], False))
    reports = {(m, name): [] for m, name, *_ in runs}
    for _ in range(a.rounds):
        for m, name, ranks, over, pin in runs:
            reports[(m, name)].append(train(a.app, a.deck, ranks, over, pin_core0=pin))

    mib = 1024.0 * 1024.0
    print(f"# pipeline parallelism, deck {os.path.relpath(a.deck, ROOT)}: global batch {a.batch} sequences "
          f"= m micro-batches of {a.batch}/m, p=2 (one core per rank) vs 1 rank (one core), {a.steps} steps per run, "
          f"{a.rounds} alternating rounds; medians over steps 2..{a.steps} and over rounds")
    print("| m | schedule | tokens/s | speed-up (target) | bubble stage 0 / 1 (formula) | "
          "activations MiB stage 0 / 1 meas (pred) |")
    print("|---|---|---|---|---|---|")
    out = []
    for m in ms:
        base = median([steady(r, "tokens_per_s") for r in reports[(m, "1 rank")]])
        print(f"| {m} | 1 rank | {base:.0f} | 1 | | |")
        for s, v in schedules:
            rs = reports[(m, s)]
            tps = median([steady(r, "tokens_per_s") for r in rs])
            stages = sorted(rs[-1]["pipeline"], key=lambda x: x["stage"])
            bub = [median([sorted(r["pipeline"], key=lambda x: x["stage"])[i]["bubble"] for r in rs])
                   for i in range(len(stages))]
            formula = stages[0]["bubble_formula"]
            target = 0.95 * 2 * (1 - formula)
            act = [st["activations"] / mib for st in stages]
            pred = [st["activations_predicted"] / mib for st in stages]
            label = s + (f" v={v}" if v > 1 else "")
            print(f"| {m} | {label} | {tps:.0f} | {tps / base:.2f} ({target:.2f}) | "
                  f"{bub[0]:.3f} / {bub[1]:.3f} ({formula:.3f}) | "
                  f"{act[0]:.0f} / {act[1]:.0f} ({pred[0]:.0f} / {pred[1]:.0f}) |")
            out.append({"m": m, "schedule": s, "v": v, "tokens_per_s": tps, "speedup": tps / base,
                        "speedup_target": target, "bubble": bub, "bubble_formula": formula,
                        "activations_mib": act, "activations_mib_predicted": pred})
    print("targets: measured bubble within 5% (relative) of the formula at m >= 4; "
          "speed-up >= 0.95 x 2 x (1 - formula bubble)")
    # One run's schedule as a Gantt chart.
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "trace.json")
        train(a.app, a.deck, 2, common + [f"train.micro_batch={a.batch // 8}", "train.accumulation=8",
                                          "parallel.p=2", f"output.trace={trace}"])
        if plot(trace, a.png):
            print(f"Gantt chart: {os.path.relpath(a.png, ROOT)}")
    if a.json:
        print("JSON " + json.dumps(out))


if __name__ == "__main__":
    main()
