#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Expert-parallel benchmark: 1 rank on one core vs e=2 vs d=2, same global batch.

One run, one table, on inputs/moe-small.yaml (8 experts, top-2, dropless):
  * tokens/s of 1 rank owning one core (micro_batch m) against 2 ranks owning one core
    each: e=2 (micro_batch m/2 per rank; each rank holds 4 of the 8 experts and the
    tokens travel to them by all-to-all) and d=2 (micro_batch m/2 per rank, every
    expert on both ranks, their gradients all-reduced with the rest);
  * per row: the speed-up over 1 rank, the exposed share of the step spent in the ep
    all-to-alls (and count exchange), the expert-load imbalance (max / mean tokens per
    expert, median over steps, and the worst step), and the expert parameters per rank
    in MiB, predicted by the planner's formula and measured from the model's layout.
Target: e=2 >= 1.6x the 1-rank throughput.

The 1-rank run is confined to core 0 with taskset. BLAS threads = 1. Each run reports
the median of its steps 2..n; the runs alternate for --rounds rounds and every figure
is the median over rounds, with the min-max spread of the tokens/s beside it.
"""
import json

from bench_util import MIB, alternate, baseline_rows, batch_args, exposed_share, median, rate_cell, title, tokens_per_s


def main():
    a = batch_args(__doc__, "moe-small.yaml", 5)
    m = a.micro_batch
    common = [f"train.steps={a.steps}"]
    one_rank, d2 = baseline_rows(m)
    rows = [one_rank, ("e=2", 2, [f"train.micro_batch={m // 2}", "parallel.e=2"], False), d2]
    reports = alternate(rows, a.rounds, a.app, a.deck, common)

    tps = tokens_per_s(reports)
    base = median(tps["1 rank"])
    print(title("expert parallelism", a, f"global batch {m} sequences"))
    print("| layout | tokens/s (min-max) | speed-up | ep exposed / step | imbalance median (worst) "
          "| expert params MiB/rank pred / meas |")
    print("|---|---|---|---|---|---|")
    out = {}
    for name, *_ in rows:
        rs = reports[name]
        t = median(tps[name])
        share = median([exposed_share(r, "ep") for r in rs])
        imb = [s["moe"]["imbalance"] for r in rs for s in r["steps"]]
        mem = rs[-1]["memory_bytes"]
        pred, meas = 4 * mem["expert_params_predicted"] / MIB, 4 * mem["expert_params_measured"] / MIB
        print(f"| {name} | {rate_cell(tps[name])} | {t / base:.3f} | "
              f"{100 * share:.1f}% | {median(imb):.3f} ({max(imb):.3f}) | {pred:.2f} / {meas:.2f} |")
        out[name] = {"tokens_per_s": t, "speedup": t / base, "ep_exposed_share": share,
                     "imbalance_median": median(imb), "imbalance_worst": max(imb),
                     "expert_params_mib_predicted": pred, "expert_params_mib_measured": meas}
    print("target: e=2 >= 1.6x the 1-rank tokens/s")
    if a.json:
        print("JSON " + json.dumps(out))


if __name__ == "__main__":
    main()
