#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The GPU check's measurements (scripts/gpu-check.sh runs it): on one GPU, from a
prebuilt mini5d (CUDA or HIP), for gpt2-124m and llama-small at fp32 and bf16,
  * mini5d's FOM (tokens/s, model TFLOP/s, MFU against the cluster file's dense peak of
    the precision the products run in) and its kernel table;
  * the PyTorch peer (perf/peers/torch_gpt_peer.py) on the same GPU with the same model
    and batch: fused causal attention (SDPA) in fp32, and with bf16 autocast: the GPU
    anchor, what a PyTorch user gets on the card without writing a kernel.
Writes OUT/gpu-check.md (the table docs/benchmarks.md takes, with the card named) and
OUT/gpu-check.json, and prints the table. A run that fails is a row that says so; the
exit status is non-zero when any run failed.

usage: gpu_check.py --app BUILD/apps/mini5d --cluster CLUSTER.yaml --out DIR
                    [--steps N] [--peer-python PY] [--decks gpt2-124m,llama-small]
Python's standard library only: the bare GPU node may lack PyYAML, so the peaks are
read from the cluster file's `peak_tflops:` block by hand (the planner checks its form).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "perf"))
from bench_throughput import kernel_table, peer_block  # noqa: E402


def cluster_facts(path):
    """The device's name and dense peaks (TFLOP/s by precision) from a cluster file."""
    name, peaks, in_peaks = "?", {}, False
    with open(path) as f:
        for raw in f:
            line = raw.split("#", 1)[0].rstrip()
            if not line.strip():
                continue
            indent = len(line) - len(line.lstrip())
            key, _, value = line.strip().partition(":")
            if key == "name" and indent == 2 and name == "?":
                name = value.strip()
            if key == "peak_tflops":
                in_peaks, peaks_indent = True, indent
                continue
            if in_peaks:
                if indent <= peaks_indent:
                    in_peaks = False
                elif re.fullmatch(r"[0-9.eE+-]+", value.strip()):
                    peaks[key] = float(value)
    if "fp32" not in peaks or "bf16" not in peaks:
        sys.exit(f"gpu_check: {path}: device.peak_tflops needs fp32 and bf16 (found {sorted(peaks)})")
    return name, peaks


def run(cmd, log, timeout, env=None):
    t0 = time.time()
    with open(log, "w") as f:
        f.write("$ " + " ".join(cmd) + "\n")
        f.flush()
        try:
            rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, timeout=timeout, env=env).returncode
        except subprocess.TimeoutExpired:
            rc = 124
    return rc, time.time() - t0


def mini5d_row(a, deck, precision, peaks, out):
    tag = f"mini5d-{deck}-{precision}"
    report = os.path.join(out, tag + ".json")
    rc, secs = run([a.app, "train", os.path.join(ROOT, "inputs", deck + ".yaml"), f"train.steps={a.steps}",
                    f"train.precision={precision}", "output.kernel_profile=true", "output.log_every=5",
                    f"output.report={report}", "checkpoint.every=0", "checkpoint.at_end=false"],
                   os.path.join(out, tag + ".log"), a.timeout)
    row = {"run": "mini5d", "deck": deck, "precision": precision, "rc": rc, "seconds": secs}
    if rc == 0 and os.path.exists(report):
        r = json.load(open(report))
        fom = r["fom"]
        row.update(tokens_per_s=fom["tokens_per_s"], tflops=fom["model_flops_per_s"] / 1e12,
                   mfu=fom["model_flops_per_s"] / (peaks[precision] * 1e12), backend=r["platform"]["backend"],
                   kernels=kernel_table(r), deck_parsed=r["deck"])
    return row


def peer_row(a, deck_parsed, deck, autocast, peaks, out):
    tag = f"torch-{deck}-{autocast}"
    m, t = deck_parsed["model"], deck_parsed["train"]
    cmd = [a.peer_python, os.path.join(ROOT, "perf", "peers", "torch_gpt_peer.py"), "--device", "cuda",
           "--attention", "sdpa", "--autocast", autocast, "--vocab", str(m["vocab"]), "--d-model", str(m["d_model"]),
           "--layers", str(m["layers"]), "--heads", str(m["heads"]), "--seq", str(m["seq"]), "--ffn", str(m["ffn"]),
           "--batch", str(t["micro_batch"] * t["accumulation"]), "--steps", str(a.steps - 1), "--warmup", "2",
           "--lr", str(t["lr"]), "--weight-decay", str(t["weight_decay"]), "--grad-clip",
           str(t.get("grad_clip", 0.0)), "--json"] + peer_block(m)
    log = os.path.join(out, tag + ".log")
    rc, secs = run(cmd, log, a.timeout)
    precision = "bf16" if autocast == "bf16" else "fp32"
    row = {"run": "pytorch", "deck": deck, "precision": precision, "rc": rc, "seconds": secs}
    lines = [l for l in open(log) if l.startswith("JSON ")]
    if rc == 0 and lines:
        p = json.loads(lines[-1][len("JSON "):])
        row.update(tokens_per_s=p["tokens_per_s"], tflops=p["model_flops_per_s"] / 1e12,
                   mfu=p["model_flops_per_s"] / (peaks[precision] * 1e12), backend=f"torch {p['torch']}, SDPA"
                   + (", bf16 autocast" if autocast == "bf16" else ""), device=p.get("device"))
    return row


def table(rows, card, peaks):
    out = [f"GPU check on {card} (dense peaks from the cluster file: fp32 {peaks['fp32']:g}, bf16 "
           f"{peaks['bf16']:g} TFLOP/s)", "",
           "| deck | precision | run | tokens/s | model TFLOP/s | MFU | mini5d / PyTorch |",
           "|---|---|---|---:|---:|---:|---:|"]
    for r in rows:
        if "tokens_per_s" not in r:
            out.append(f"| {r['deck']} | {r['precision']} | {r['run']} | failed (rc {r['rc']}) | | | |")
            continue
        peer = next((p for p in rows if p["run"] == "pytorch" and p["deck"] == r["deck"]
                     and p["precision"] == r["precision"] and "tokens_per_s" in p), None)
        ratio = f"{r['tokens_per_s'] / peer['tokens_per_s']:.2f}" if r["run"] == "mini5d" and peer else ""
        out.append(f"| {r['deck']} | {r['precision']} | {r['run']} ({r['backend']}) | {r['tokens_per_s']:.0f} | "
                   f"{r['tflops']:.2f} | {100 * r['mfu']:.1f}% | {ratio} |")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--app", required=True)
    ap.add_argument("--cluster", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=12, help="mini5d steps (its FOM is the median after the first)")
    ap.add_argument("--timeout", type=int, default=90, help="seconds per run")
    ap.add_argument("--peer-python", default=sys.executable)
    ap.add_argument("--decks", default="gpt2-124m,llama-small")
    ap.add_argument("--no-peer", action="store_true", help="mini5d rows only (no PyTorch on this node)")
    a = ap.parse_args()
    if a.steps < 3:
        ap.error("--steps must be at least 3 (the FOM is a median over the steps after the first)")
    os.makedirs(a.out, exist_ok=True)
    card, peaks = cluster_facts(a.cluster)
    rows = []
    for deck in [d for d in a.decks.split(",") if d]:
        for precision in ("fp32", "bf16"):
            row = mini5d_row(a, deck, precision, peaks, a.out)
            rows.append(row)
            print(f"gpu-check: mini5d {deck} {precision}: " +
                  (f"{row['tokens_per_s']:.0f} tokens/s, MFU {100 * row['mfu']:.1f}%" if "mfu" in row
                   else f"FAILED (rc {row['rc']}, log {a.out}/mini5d-{deck}-{precision}.log)"), flush=True)
            if a.no_peer or "deck_parsed" not in row:
                continue
            prow = peer_row(a, row["deck_parsed"], deck, "bf16" if precision == "bf16" else "none", peaks, a.out)
            rows.append(prow)
            print(f"gpu-check: pytorch {deck} {precision}: " +
                  (f"{prow['tokens_per_s']:.0f} tokens/s, MFU {100 * prow['mfu']:.1f}%" if "mfu" in prow
                   else f"FAILED (rc {prow['rc']})"), flush=True)
    text = table(rows, card, peaks)
    kernels = "\n\n".join(f"{r['deck']} {r['precision']}:\n{r['kernels']}" for r in rows if r.get("kernels"))
    with open(os.path.join(a.out, "gpu-check.md"), "w") as f:
        f.write(text + "\n\n```\n" + kernels + "\n```\n")
    with open(os.path.join(a.out, "gpu-check.json"), "w") as f:
        json.dump([{k: v for k, v in r.items() if k != "deck_parsed"} for r in rows], f, indent=1)
    print(text)
    print(kernels)
    return 0 if all(r["rc"] == 0 and "tokens_per_s" in r for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
