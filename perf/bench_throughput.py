#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Throughput benchmark: mini5d against its PyTorch peer on the same cores, same model.

Rows (each the median of --rounds alternating rounds, at least 3, with min-max):
  1x1   mini5d 1 rank x 1 thread        vs the peer, 1 process x 1 thread
  d2    mini5d d = 2 (2 ranks x 1 core)  vs the peer under DDP (gloo), 2 x 1 thread
  omp2  mini5d 1 rank x 2 OpenMP threads vs the peer, 1 process x 2 threads; only where
        mini5d's Kokkos has the OpenMP backend (skipped with a note otherwise)
  llama as 1x1, on --llama-deck (inputs/llama-small.yaml: RMSNorm, RoPE, SwiGLU,
        grouped-query attention, no biases) against the peer's --block llama
The peer is perf/peers/torch_gpt_peer.py (Debian's python3-torch), given the deck's
model, batch per rank, learning rate, weight decay and gradient clipping.

Both count model FLOPs as 6*N*tokens + 12*L*d*seq*tokens, N = parameters that take part
in matrix products. mini5d's N is its matmul weights; the peer's N also counts biases
and LayerNorm gains (0.2% more on `small`), so its FLOP/s reads slightly higher for the
same speed: compare tokens/s.

mini5d's figure is its FOM (median over steps 2..n); the peer's the median over its
steps after warm-up. The kernel table (time, share, GFLOP/s, GB/s and roofline
fraction of each kernel family, from mini5d's report) is printed for the 1x1 round with
the median tokens/s; ceilings come from `mini5d ceilings`, which this script runs first
(it measures once and caches).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_mini5d(app, deck, steps, ranks, threads, overrides):
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "report.json")
        env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads),
                   OMP_PROC_BIND="false")
        subprocess.run(["mpiexec", "-n", str(ranks), os.path.abspath(app), "train", os.path.abspath(deck),
                        f"train.steps={steps}", f"output.report={report}", "output.log_every=1000"] + overrides,
                       check=True, env=env, stdout=subprocess.DEVNULL, cwd=tmp)
        with open(report) as f:
            return json.load(f)


def peer_block(m):
    """The peer's flags for the deck's block: GPT-2's or the whole Llama-style one (the
    peer has no mixes of the two)."""
    parts = (m.get("norm", "layernorm"), m.get("mlp", "gelu"), str(m.get("bias", "true")).lower(),
             m.get("positions", "learned"))
    if parts == ("layernorm", "gelu", "true", "learned"):
        return ["--block", "gpt2"]
    if parts == ("rmsnorm", "swiglu", "false", "rope"):
        kv = int(m.get("kv_heads", 0) or m["heads"])
        return ["--block", "llama", "--kv-heads", str(kv), "--rope-theta", str(m.get("rope_theta", 10000))]
    raise SystemExit(f"bench_throughput: the peer has GPT-2's block or the whole Llama-style one, not "
                     f"norm={parts[0]} mlp={parts[1]} bias={parts[2]} positions={parts[3]}")


def run_peer(peer, deck, processes, threads, steps):
    m, t = deck["model"], deck["train"]
    cmd = ["/usr/bin/python3", peer, "--vocab", str(m["vocab"]), "--d-model", str(m["d_model"]),
           "--layers", str(m["layers"]), "--heads", str(m["heads"]), "--seq", str(m["seq"]),
           "--ffn", str(m["ffn"]), "--batch", str(t["micro_batch"] * t["accumulation"]),
           "--steps", str(steps), "--threads", str(threads), "--ddp", str(processes),
           "--lr", str(t["lr"]), "--weight-decay", str(t["weight_decay"]),
           "--grad-clip", str(t.get("grad_clip", 0.0)), "--json"] + peer_block(m)
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    line = [l for l in out.splitlines() if l.startswith("JSON ")][-1]
    return json.loads(line[len("JSON "):])


def cell(xs, f):
    return f"{f.format(statistics.median(xs))} ({f.format(min(xs))}-{f.format(max(xs))})"


def kernel_table(report):
    k = report.get("kernels")
    if not k or not k.get("families"):
        return "  (no kernel table in this mini5d's report)"
    c = k.get("ceilings")
    head = (f"kernel breakdown (1x1, the median round; ceilings: sgemm {c['gemm_gflops']:.1f} GFLOP/s, "
            f"stream {c['stream_gbs']:.1f} GB/s)" if c else "kernel breakdown (1x1; no ceilings cached)")
    lines = [head, f"  {'family':15s} {'ms/step':>9s} {'share':>6s} {'GFLOP/s':>8s} {'GB/s':>7s} {'of roof':>8s}"]
    for f in k["families"]:
        roof = f"{100 * f['roofline_fraction']:.1f}%" if f.get("roofline_fraction") is not None else "n/a"
        lines.append(f"  {f['name']:15s} {1e3 * f['seconds_per_step']:9.2f} {100 * f['share']:5.1f}% "
                     f"{f['gflops']:8.2f} {f['gbs']:7.2f} {roof:>8s}")
    lines.append(f"  {'other':15s} {1e3 * k['other_seconds_per_step']:9.2f}")
    lines.append(f"  matrix products (gemm + attention_gemm): {100 * k['gemm_share']:.1f}% of the step")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--deck", default=os.path.join(ROOT, "inputs", "small.yaml"))
    ap.add_argument("--app", default=os.path.join(ROOT, "build", "apps", "mini5d"))
    ap.add_argument("--peer", default=os.path.join(ROOT, "perf", "peers", "torch_gpt_peer.py"))
    ap.add_argument("--steps", type=int, default=5, help="measured steps per run (mini5d runs one more)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--llama-deck", default=os.path.join(ROOT, "inputs", "llama-small.yaml"))
    ap.add_argument("--rows", default="1x1,d2,omp2,llama", help="comma-separated: 1x1, d2, omp2, llama")
    ap.add_argument("--before", help="an earlier mini5d build, run in the same rounds (before/after column)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    if a.rounds < 3:
        ap.error("--rounds must be at least 3 (a median of fewer rounds is not a median)")
    rows = [r for r in a.rows.split(",") if r]
    for r in rows:
        if r not in ("1x1", "d2", "omp2", "llama"):
            ap.error(f"--rows: unknown row {r!r} (valid: 1x1, d2, omp2, llama)")
    subprocess.run([a.app, "ceilings"], check=True, stdout=subprocess.DEVNULL,
                   env=dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1"))

    probe = run_mini5d(a.app, a.deck, 1, 1, 1, [])
    backend = probe["platform"]["backend"]
    deck = probe["deck"]
    notes = []
    if "omp2" in rows and "openmp" not in backend.lower():
        rows.remove("omp2")
        notes.append(f"omp2 row skipped: this mini5d's Kokkos runs {backend}, not OpenMP "
                     "(build against a Kokkos with the OpenMP backend, e.g. Spack's Kokkos >= 4, for it)")
    setups = {"1x1": (1, 1, ["parallel.d=1"]), "d2": (2, 1, ["parallel.d=2"]), "omp2": (1, 2, ["parallel.d=1"]),
              "llama": (1, 1, ["parallel.d=1"])}
    decks = {r: (a.deck, deck) for r in rows}
    if "llama" in rows:
        decks["llama"] = (a.llama_deck, run_mini5d(a.app, a.llama_deck, 1, 1, 1, [])["deck"])
    got = {r: {"mini": [], "peer": [], "before": []} for r in rows}
    for _ in range(a.rounds):
        for r in rows:
            ranks, threads, ov = setups[r]
            path, parsed = decks[r]
            got[r]["mini"].append(run_mini5d(a.app, path, a.steps + 1, ranks, threads, ov))
            got[r]["peer"].append(run_peer(a.peer, parsed, ranks, threads, a.steps))
            if a.before:
                got[r]["before"].append(run_mini5d(a.before, path, a.steps + 1, ranks, threads, ov))

    if "llama" in rows:
        lm = decks["llama"][1]["model"]
        print(f"llama row: {os.path.basename(a.llama_deck)}, d_model {lm['d_model']}, layers {lm['layers']}, heads "
              f"{lm['heads']} ({lm.get('kv_heads') or lm['heads']} K/V), seq {lm['seq']}, ffn {lm['ffn']}")
    m = deck["model"]
    # The --deck's model line describes the other rows; the llama row has its own above.
    if any(r != "llama" for r in rows):
        print(f"model: vocab {m['vocab']}, d_model {m['d_model']}, layers {m['layers']}, heads {m['heads']}, "
              f"seq {m['seq']}, ffn {m['ffn']}, micro_batch {deck['train']['micro_batch']} per rank")
    print(f"median (min-max) of {a.rounds} alternating rounds; mini5d {backend}")
    print(f"{'row':6s} {'mini5d tokens/s':>26s} {'pytorch tokens/s':>26s} {'ratio':>22s}")
    summary = {}
    for r in rows:
        mt = [x["fom"]["tokens_per_s"] for x in got[r]["mini"]]
        pt = [x["tokens_per_s"] for x in got[r]["peer"]]
        ratios = [x / y for x, y in zip(mt, pt)]
        ratio = statistics.median(mt) / statistics.median(pt)
        print(f"{r:6s} {cell(mt, '{:.1f}'):>26s} {cell(pt, '{:.1f}'):>26s} "
              f"{ratio:8.3f} ({min(ratios):.3f}-{max(ratios):.3f})")
        summary[r] = {"mini5d_tokens_per_s": statistics.median(mt), "pytorch_tokens_per_s": statistics.median(pt),
                      "ratio": ratio, "ratio_per_round": ratios}
        if a.before:
            bt = [x["fom"]["tokens_per_s"] for x in got[r]["before"]]
            print(f"{'':6s} before: {cell(bt, '{:.1f}')} tokens/s, ratio to pytorch "
                  f"{statistics.median(bt) / statistics.median(pt):.3f}; after/before "
                  f"{statistics.median(mt) / statistics.median(bt):.3f}")
            summary[r]["before_tokens_per_s"] = statistics.median(bt)
    for n in notes:
        print("note: " + n)
    if "1x1" in rows:
        runs = got["1x1"]["mini"]
        med = sorted(runs, key=lambda x: x["fom"]["tokens_per_s"])[len(runs) // 2]
        print(kernel_table(med))
        summary["kernels"] = med.get("kernels")
    if a.json:
        print(json.dumps(summary))


if __name__ == "__main__":
    main()
