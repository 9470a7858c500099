#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Precision benchmark: fp32 against bf16 (fp32 master weights) on the small deck.

Rows: 1 rank, t=2, c=2, p=2 (two micro-batches), d=2 with the gradients reduced in
fp32, and d=2 reduced in bf16 (parallel.grad_reduce_dtype=bf16), each in fp32 and in
bf16. For each: tokens/s, the bytes each axis moved per step (measured, and whether the
planner's prediction equals it), the activation memory per rank (kept + work buffers,
measured), the state memory (weights, gradients, optimizer), and the share of the step
exposed in communication.

On this CPU the products run in fp32 whatever the storage (the BLAS has no bf16 GEMM:
bf16 operands are widened to fp32 panels), so bf16 costs conversion passes here; what it
gains is bytes and memory. The runs alternate for `--rounds` rounds; figures are the
median over the rounds with the spread (min-max) beside tokens/s.
"""
import json

from bench_util import MIB, bench_parser, median, steady, train, exposed_share

# (name, ranks, sequences-per-step divisor, overrides): the micro-batch per rank is the
# step's sequences over the divisor (d=2 halves it; p=2 runs two micro-batches of half),
# so every row trains the same global batch.
ROWS = [
    ("1 rank", 1, 1, []),
    ("t2 sp", 2, 1, ["parallel.t=2", "parallel.sp=true"]),
    ("c2", 2, 1, ["parallel.c=2"]),
    ("p2 m2", 2, 2, ["parallel.p=2", "train.accumulation=2"]),
    ("d2 zero1", 2, 2, ["parallel.d=2", "parallel.zero=1"]),
    ("d2 zero1, bf16 reduce", 2, 2, ["parallel.d=2", "parallel.zero=1", "parallel.grad_reduce_dtype=bf16"]),
]
AXES = ("t", "c", "p", "d")  # the axes whose bytes per step the table shows


def overrides(row, precision, steps, micro_batch):
    """The row's deck overrides in `precision`; None where the row does not exist in it."""
    _, _, d, extra = row
    if precision == "fp32" and any("grad_reduce_dtype" in x for x in extra):
        return None  # a bf16 reduction needs a bf16 run
    return extra + [f"train.precision={precision}", f"train.steps={steps}", f"train.micro_batch={micro_batch // d}"]


def main():
    ap = bench_parser(__doc__, "small.yaml", 6, 3, steps_help="steps per run (the first is not measured)")
    ap.add_argument("--micro-batch", type=int, default=4, help="sequences per step (each row divides them into its micro-batches)")
    a = ap.parse_args()
    runs = {}  # (row, precision) -> [report per round]
    for _ in range(max(1, a.rounds)):
        for row in ROWS:
            for precision in ("fp32", "bf16"):
                o = overrides(row, precision, a.steps, a.micro_batch)
                if o is None:
                    continue
                runs.setdefault((row[0], precision), []).append(train(a.app, a.deck, row[1], o))
    print("| layout | precision | tokens/s | " + " | ".join(f"bytes/step {ax}" for ax in AXES) +
          " | predicted = measured | activations MiB | weights / grads / optimizer MiB | exposed comm |")
    print("|---|---|---|" + "---|" * len(AXES) + "---|---|---|---|")
    table = []
    for (name, precision), reports in runs.items():
        tps = [steady(r, "tokens_per_s") for r in reports]
        last = reports[-1]
        b = last["bytes_per_step"]
        exact = all(v["worst_relative_difference"] == 0 for v in b.values())
        act = last["memory_bytes"]["activations_measured"]
        st = last["memory_bytes"]["state_measured"]
        exposed = median([sum(exposed_share(r, ax) for ax in ("tp", "cp", "pp", "dp")) for r in reports])
        cells = {
            "layout": name, "precision": precision, "tokens_per_s": median(tps),
            "tokens_per_s_min": min(tps), "tokens_per_s_max": max(tps),
            "bytes": {ax: b.get(ax, {}).get("measured", 0) for ax in AXES},
            "exact": exact, "activations_mib": (act["kept"] + act["workspace"]) / MIB,
            "kept_mib": act["kept"] / MIB, "state_mib": [st["weights"] / MIB, st["gradients"] / MIB,
                                                          st["optimizer"] / MIB],
            "exposed_share": exposed,
        }
        table.append(cells)
        byte_cells = " | ".join(f"{cells['bytes'][ax] / MIB:.2f} MiB" if cells['bytes'][ax] else "" for ax in AXES)
        print(f"| {name} | {precision} | {median(tps):.0f} ({min(tps):.0f}-{max(tps):.0f}) | {byte_cells} | "
              f"{'yes' if exact else 'NO'} | "
              f"{cells['activations_mib']:.1f} (kept {cells['kept_mib']:.1f}) | "
              f"{' / '.join(f'{x:.1f}' for x in cells['state_mib'])} | {100 * exposed:.1f}% |")
    if a.json:
        print(json.dumps(table, indent=1))


if __name__ == "__main__":
    main()
