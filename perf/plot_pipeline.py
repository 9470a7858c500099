#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Gantt chart of a pipeline schedule from a mini5d trace (output.trace: Chrome trace-event
JSON): one row per rank, forward and backward of each micro-batch in two colours, labelled
with the micro-batch (and chunk), idle time left blank.

    python3 perf/plot_pipeline.py trace.json pipeline.png [--step N]

--step picks one step (default: the last one recorded, the first is warm-up); 0 draws all.
Needs matplotlib (python3-matplotlib: scripts/setup-debian.sh --bench).
"""
import argparse
import json

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402

COLOURS = {"forward": "#4C72B0", "backward": "#DD8452"}


def load(path, step):
    with open(path) as f:
        trace = json.load(f)
    names, bars = {}, []
    for e in trace["traceEvents"]:
        if e.get("ph") == "M" and e.get("name") == "process_name":
            names[e["pid"]] = e["args"]["name"]
        elif e.get("ph") == "X" and e.get("cat") in COLOURS:
            bars.append(e)
    steps = sorted({b["args"]["step"] for b in bars})
    if step is None:
        step = steps[-1] if steps else 0
    if step:
        bars = [b for b in bars if b["args"]["step"] == step]
    return names, bars, step


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("png")
    ap.add_argument("--step", type=int, default=None)
    ap.add_argument("--title", default=None)
    a = ap.parse_args()
    names, bars, step = load(a.trace, a.step)
    if not bars:
        raise SystemExit(f"{a.trace}: no forward or backward events" + (f" in step {step}" if step else ""))
    t0 = min(b["ts"] for b in bars)
    end = max(b["ts"] + b["dur"] for b in bars) - t0
    ranks = sorted(names) or sorted({b["pid"] for b in bars})
    fig, ax = plt.subplots(figsize=(12, 0.6 * len(ranks) + 1.4))
    for b in bars:
        row = ranks.index(b["pid"])
        x, w = (b["ts"] - t0) / 1e3, b["dur"] / 1e3
        ax.broken_barh([(x, w)], (row - 0.4, 0.8), facecolors=COLOURS[b["cat"]], edgecolor="white", linewidth=0.5)
        if w > end / 1e3 / 80:  # label bars wide enough to read
            ax.text(x + w / 2, row, b["name"], ha="center", va="center", fontsize=7, color="white")
    ax.set_yticks(range(len(ranks)))
    ax.set_yticklabels([names.get(r, f"rank {r}") for r in ranks])
    ax.invert_yaxis()
    ax.set_xlabel("ms" + (f" (step {step})" if step else ""))
    ax.set_xlim(0, end / 1e3)
    ax.legend(handles=[matplotlib.patches.Patch(color=c, label=k) for k, c in COLOURS.items()], loc="upper left",
              bbox_to_anchor=(1.0, 1.0),
              fontsize=8)
    ax.set_title(a.title or f"pipeline schedule: {a.trace}")
    fig.tight_layout()
    fig.savefig(a.png, dpi=120)
    print(f"wrote {a.png}")


if __name__ == "__main__":
    main()
