#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Roofline PNG from a mini5d report: one point per kernel family at its arithmetic
intensity (FLOPs per byte moved) and achieved GFLOP/s, under the roof
min(sgemm peak, intensity x stream bandwidth) of the report's ceilings.

    python3 perf/plot_roofline.py mini5d-report.json [-o roofline.png]

The report needs its "kernels" record with ceilings (run `mini5d ceilings` once before
training, so the run finds them cached). Families that count no FLOPs (embedding
lookups, copies) have no intensity and are listed in the legend only.
"""
import argparse
import json
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("report")
    ap.add_argument("-o", "--output", default="roofline.png")
    a = ap.parse_args()
    with open(a.report) as f:
        rep = json.load(f)
    k = rep.get("kernels")
    if not k or not k.get("families"):
        sys.exit(f"plot_roofline: {a.report} has no kernel table (\"kernels\"); is it a mini5d report?")
    c = k.get("ceilings")
    if not c:
        sys.exit(f"plot_roofline: {a.report} has no ceilings; run `mini5d ceilings` once, then train again")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    peak, bw = c["gemm_gflops"], c["stream_gbs"]
    ridge = peak / bw
    fig, ax = plt.subplots(figsize=(8, 5.5))
    xs = [ridge / 1000, ridge, ridge * 1000]
    ax.plot(xs, [min(peak, x * bw) for x in xs], color="black", lw=1.5)
    ax.annotate(f"sgemm {peak:.0f} GFLOP/s", (ridge * 2, peak * 1.08), fontsize=9)
    ax.annotate(f"stream {bw:.1f} GB/s", (ridge / 300, ridge / 300 * bw * 1.3), fontsize=9, rotation=0)
    no_flops = []
    for fam in k["families"]:
        if fam["flops_per_step"] <= 0 or fam["bytes_per_step"] <= 0:
            no_flops.append(f"{fam['name']} ({100 * fam['share']:.1f}%)")
            continue
        ai = fam["flops_per_step"] / fam["bytes_per_step"]
        ax.scatter([ai], [fam["gflops"]], s=30 + 600 * fam["share"], alpha=0.7)
        ax.annotate(f"{fam['name']} {100 * fam['share']:.1f}%", (ai, fam["gflops"]), fontsize=8,
                    xytext=(5, 5), textcoords="offset points")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP / byte)")
    ax.set_ylabel("achieved GFLOP/s")
    m = rep["deck"]["model"]
    title = (f"mini5d kernel roofline: d_model {m['d_model']}, layers {m['layers']}, seq {m['seq']}; "
             f"matrix products {100 * k['gemm_share']:.0f}% of the step")
    if no_flops:
        title += "\nno FLOPs counted: " + ", ".join(no_flops)
    ax.set_title(title, fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(a.output, dpi=120)
    print(f"roofline written to {a.output}")


if __name__ == "__main__":
    main()
