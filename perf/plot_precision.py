#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Convergence in bf16 against fp32: the tiny and llama-tiny decks trained for their
steps in both precisions (one rank), the four loss curves in one plot, and the final
losses (mean of the last 50 steps) with their difference.

The margin stated in docs/precision.md: the bf16 run's final loss within 2% of the fp32
run's, for each deck (the decks' own 5% bound to the entropy floor is the scale: tiny's
1000 steps end about 4.6% above it).

Needs matplotlib (python3-matplotlib: scripts/setup-debian.sh --bench).
"""
import argparse
import os

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402

from bench_util import ROOT, train  # noqa: E402

DECKS = ["tiny.yaml", "llama-tiny.yaml"]
MARGIN = 0.02


def final(losses, last=50):
    tail = losses[-last:]
    return sum(tail) / len(tail)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--app", default=os.path.join(ROOT, "build", "apps", "mini5d"))
    ap.add_argument("--out", default=os.path.join(ROOT, "perf", "precision_convergence.png"))
    ap.add_argument("--steps", type=int, default=0, help="steps per run (0: the deck's)")
    a = ap.parse_args()
    fig, axes = plt.subplots(1, len(DECKS), figsize=(6 * len(DECKS), 4), sharey=True)
    ok = True
    for ax, deck in zip(axes, DECKS):
        finals = {}
        for precision, style in (("fp32", "-"), ("bf16", "--")):
            extra = [f"train.precision={precision}", "checkpoint.at_end=false"]
            if a.steps:
                extra.append(f"train.steps={a.steps}")
            report = train(a.app, os.path.join(ROOT, "inputs", deck), 1, extra)
            losses = [s["loss"] for s in report["steps"]]
            finals[precision] = final(losses)
            ax.plot(range(1, len(losses) + 1), losses, style, lw=0.8,
                    label=f"{precision}: final {finals[precision]:.4f}")
        diff = finals["bf16"] / finals["fp32"] - 1
        ok = ok and abs(diff) <= MARGIN
        print(f"{deck}: final loss (mean of the last 50 steps) fp32 {finals['fp32']:.4f}, bf16 {finals['bf16']:.4f}, "
              f"bf16/fp32 - 1 = {100 * diff:+.2f}% (margin {100 * MARGIN:.0f}%)")
        ax.set_title(f"{deck}: bf16 / fp32 - 1 = {100 * diff:+.2f}%")
        ax.set_xlabel("step")
        ax.set_yscale("log")
        ax.legend()
    axes[0].set_ylabel("loss (nats/token)")
    fig.tight_layout()
    fig.savefig(a.out, dpi=120)
    print(f"wrote {a.out}; {'within' if ok else 'NOT within'} the {100 * MARGIN:.0f}% margin")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
