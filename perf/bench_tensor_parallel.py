#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Tensor-parallel benchmark: 1 rank on one core vs t=2 (SP off and on) vs d=2, same global batch.

One run, one table:
  * tokens/s of 1 rank owning one core (micro_batch m) against 2 ranks owning one core
    each: t=2 without and with sequence parallelism (micro_batch m: every rank of the
    tensor group sees the same sequences) and d=2 (micro_batch m/2 per rank); the same
    global batch of m sequences per step;
  * per row: the speed-up over 1 rank, the exposed tp share of the step, and the
    activation MiB per rank (kept for the backward, plus the backward's work buffers),
    predicted by the planner's formulas and measured by the model's ledger;
  * one row each for recompute none, selective and full at t=2 with SP.
Targets: t=2 with SP >= 1.7x the 1-rank throughput, its activations <= 0.6x.

The 1-rank run is confined to core 0 with taskset. BLAS threads = 1. Each run reports
the median of its steps 2..n; the runs alternate for --rounds rounds and every figure
is the median over rounds, with the min-max spread of the tokens/s beside it.
"""
import json

from bench_util import (activations_mib, alternate, baseline_rows, batch_args, exposed_share, median, rate_cell,
                        title, tokens_per_s)


def main():
    a = batch_args(__doc__, "small.yaml", 4)
    m = a.micro_batch
    common = [f"train.steps={a.steps}"]
    one_rank, d2 = baseline_rows(m)
    rows = [
        one_rank,
        ("t=2, SP off", 2, [f"train.micro_batch={m}", "parallel.t=2", "parallel.sp=false"], False),
        ("t=2, SP on", 2, [f"train.micro_batch={m}", "parallel.t=2", "parallel.sp=true"], False),
        d2,
        ("t=2, SP on, recompute selective", 2,
         [f"train.micro_batch={m}", "parallel.t=2", "train.recompute=selective"], False),
        ("t=2, SP on, recompute full", 2, [f"train.micro_batch={m}", "parallel.t=2", "train.recompute=full"], False),
    ]
    reports = alternate(rows, a.rounds, a.app, a.deck, common)

    tps = tokens_per_s(reports)
    base = median(tps["1 rank"])
    print(title("tensor parallelism", a, f"global batch {m} sequences"))
    print("| layout | tokens/s (min-max) | speed-up | tp exposed / step | activations MiB/rank pred / meas |")
    print("|---|---|---|---|---|")
    out = {}
    for name, *_ in rows:
        rs = reports[name]
        t = median(tps[name])
        share = median([exposed_share(r, "tp") for r in rs])
        pred, meas = activations_mib(rs[-1], "predicted"), activations_mib(rs[-1], "measured")
        print(f"| {name} | {rate_cell(tps[name])} | {t / base:.3f} | "
              f"{100 * share:.1f}% | {pred:.1f} / {meas:.1f} |")
        out[name] = {"tokens_per_s": t, "speedup": t / base, "tp_exposed_share": share,
                     "activations_mib_predicted": pred, "activations_mib_measured": meas}
    print("targets: t=2 SP on >= 1.7x the 1-rank tokens/s; its activations <= 0.6x the 1-rank figure")
    if a.json:
        print("JSON " + json.dumps(out))


if __name__ == "__main__":
    main()
