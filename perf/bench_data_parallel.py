#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Data-parallel benchmark: 1 rank on one core vs d=2 on two cores, same global batch.

One run, one table:
  * tokens/s of 1 rank owning one core (micro_batch m, accumulation 2) against 2 ranks
    with d=2 each owning one core (micro_batch m, accumulation 1): the same global batch
    of 2m sequences and the same GEMM shapes; the target is a speed-up of at least 1.8;
  * for ZeRO 0-3 at d=2: the exposed communication share of the step, and for the
    gradient reduction its time in flight (post to observed completion) and its exposed
    time (inside MPI calls: post, every test the backward's progress hook makes, wait;
    without an asynchronous progress thread that is where MPICH does the work) per
    step, reported separately; and the weights / gradients / optimizer bytes per rank,
    predicted and measured.

The 1-rank run is confined to core 0 with taskset, so hwloc sees (and mini5d binds
it to) that one core; the 2-rank runs bind one rank per core. BLAS threads = 1.
Each run reports the median of its steps 2..n (the first step pays page faults and
BLAS set-up). This machine's speed drifts by +-10% from run to run, so the runs
alternate for `--rounds` rounds (at least 3) and every figure is the median over the
rounds, with the spread (min-max over the rounds) beside it.
"""
import json
import os

from bench_util import ROOT, bench_parser, median, steady, train


def spread(xs):
    """'median (min-max)' of the per-round figures."""
    return median(xs), min(xs), max(xs)


def fmt(xs, f="{:.1f}", scale=1.0):
    m, lo, hi = spread([x * scale for x in xs])
    return f"{f.format(m)} ({f.format(lo)}-{f.format(hi)})"


def main():
    ap = bench_parser(__doc__, "small.yaml", 11, 3, steps_help="steps per run (the first is not measured)")
    ap.add_argument("--micro-batch", type=int, default=8)
    a = ap.parse_args()
    if a.rounds < 3 or a.steps < 2:
        ap.error("--rounds must be at least 3 and --steps at least 2 (the first step is not measured)")
    m = a.micro_batch
    common = [f"train.steps={a.steps}", f"train.micro_batch={m}"]

    ones, runs = [], {zero: [] for zero in range(4)}
    for _ in range(a.rounds):
        ones.append(train(a.app, a.deck, 1, common + ["train.accumulation=2"], pin_core0=True))
        for zero in range(4):
            runs[zero].append(train(a.app, a.deck, 2, common + ["parallel.d=2", f"parallel.zero={zero}"]))

    def per_round(reports, f):
        return [f(r) for r in reports]

    tps1 = per_round(ones, lambda r: steady(r, "tokens_per_s"))
    tps2 = per_round(runs[0], lambda r: steady(r, "tokens_per_s"))
    print(f"# data parallelism, deck {os.path.relpath(a.deck, ROOT)}: global batch {2 * m} sequences, "
          f"{a.steps} steps per run, {a.rounds} alternating rounds; medians over steps 2..{a.steps}, then "
          f"median (min-max) over the rounds")
    print(f"1 rank (1 core, micro_batch {m} x accumulation 2): {fmt(tps1)} tokens/s")
    print(f"2 ranks d=2 (1 core each, micro_batch {m}), ZeRO 0: {fmt(tps2)} tokens/s")
    print(f"speed-up {median(tps2) / median(tps1):.3f} (target >= 1.8)")
    print()
    print("| ZeRO | tokens/s | speed-up | comm exposed / step | grad reduction in flight ms/step | "
          "grad reduction exposed ms/step | weights MiB pred/meas | grads MiB pred/meas | optimizer MiB pred/meas |")
    print("|---|---|---|---|---|---|---|---|---|")
    out = {"tokens_per_s_1rank": median(tps1), "stages": {}}
    mib = 1024.0 * 1024.0

    def grads(r, key):
        # The report keeps gradient traffic as run totals: per step is the mean over
        # all the run's steps, the first included.
        g = r["communication"]["dp"]["by_traffic"]["grads"]
        return 1e3 * g[key] / len(r["steps"])
    for zero, reports in runs.items():
        tps = per_round(reports, lambda r: steady(r, "tokens_per_s"))
        exposed = per_round(reports, lambda r: median([s["comm_exposed_seconds"] / s["seconds"]
                                                       for s in r["steps"][1:]]))
        flight = per_round(reports, lambda r: grads(r, "seconds"))
        gexp = per_round(reports, lambda r: grads(r, "exposed_seconds"))
        pred, meas = reports[-1]["memory_bytes"]["state_predicted"], reports[-1]["memory_bytes"]["state_measured"]
        cell = lambda k: f"{pred[k] / mib:.2f} / {meas[k] / mib:.2f}"
        print(f"| {zero} | {fmt(tps)} | {median(tps) / median(tps1):.3f} | {fmt(exposed, '{:.1f}%', 100)} | "
              f"{fmt(flight)} | {fmt(gexp)} | {cell('weights')} | {cell('gradients')} | {cell('optimizer')} |")
        out["stages"][zero] = {"tokens_per_s": median(tps), "speedup": median(tps) / median(tps1),
                               "exposed_share": median(exposed), "grad_in_flight_ms": median(flight),
                               "grad_exposed_ms": median(gexp), "predicted": pred, "measured": meas}
    if a.json:
        print("JSON " + json.dumps(out))


if __name__ == "__main__":
    main()
