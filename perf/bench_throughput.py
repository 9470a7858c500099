#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Throughput benchmark: mini5d at 1 rank vs the PyTorch peer at 1 thread, same model.

Runs, in one go and on the same thread count, mini5d on a deck (default inputs/small.yaml)
and ../shared/perf-peers/torch_gpt.py (Debian's python3-torch) on the same configuration
with an untied head, then prints both medians and their ratio.

Both count model FLOPs as 6*N*tokens + 12*L*d*seq*tokens, N = parameters that take part
in matrix products. mini5d's N is its matmul weights (QKV, attention projection, MLP,
LM head); the peer's N also counts biases and LayerNorm parameters (0.2% more on
`small`), so its FLOP/s reads slightly higher for the same speed: compare tokens/s.

Medians: mini5d over its steps 2..n, the peer over its measured steps after warm-up.
The machine is noisy: the two runs alternate `--rounds` times (at least 3) and the
median of each side over the rounds is reported, with its spread (min-max) beside it.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_mini5d(app, deck, steps, threads):
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "report.json")
        env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
        subprocess.run(["mpiexec", "-n", "1", app, "train", deck, f"train.steps={steps}",
                        f"output.report={report}", "output.log_every=1000"],
                       check=True, env=env, stdout=subprocess.DEVNULL)
        with open(report) as f:
            r = json.load(f)
    return r


def run_peer(peer, model, batch, steps, threads):
    cmd = ["/usr/bin/python3", peer, "--vocab", str(model["vocab"]), "--d-model", str(model["d_model"]),
           "--layers", str(model["layers"]), "--heads", str(model["heads"]), "--seq", str(model["seq"]),
           "--batch", str(batch), "--steps", str(steps), "--threads", str(threads), "--untied", "--json"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    line = [l for l in out.splitlines() if l.startswith("JSON ")][-1]
    return json.loads(line[len("JSON "):])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--deck", default=os.path.join(ROOT, "inputs", "small.yaml"))
    ap.add_argument("--app", default=os.path.join(ROOT, "build", "apps", "mini5d"))
    ap.add_argument("--peer", default=os.path.join(ROOT, "..", "shared", "perf-peers", "torch_gpt.py"))
    ap.add_argument("--steps", type=int, default=5, help="steps per run (mini5d drops its first)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    if a.rounds < 3:
        ap.error("--rounds must be at least 3 (a median of fewer rounds is not a median)")

    mini, peer = [], []
    for _ in range(a.rounds):
        r = run_mini5d(a.app, a.deck, a.steps + 1, a.threads)
        mini.append(r)
        m = r["deck"]["model"]
        if m["ffn"] != 4 * m["d_model"]:
            sys.exit("bench: the peer's MLP is 4*d_model wide; this deck's ffn differs")
        peer.append(run_peer(a.peer, m, r["deck"]["train"]["micro_batch"] * r["deck"]["train"]["accumulation"],
                             a.steps, a.threads))
    m_tps_r = [r["fom"]["tokens_per_s"] for r in mini]
    m_flops_r = [r["fom"]["model_flops_per_s"] / 1e9 for r in mini]
    p_tps_r = [p["tokens_per_s"] for p in peer]
    p_flops_r = [p.get("model_flops_per_s", p.get("flops_per_s", 0.0)) / 1e9 for p in peer]
    m_tps, p_tps = statistics.median(m_tps_r), statistics.median(p_tps_r)

    def cell(xs, f):
        return f"{f.format(statistics.median(xs))} ({f.format(min(xs))}-{f.format(max(xs))})"
    model = mini[0]["deck"]["model"]
    print(f"model: vocab {model['vocab']}, d_model {model['d_model']}, layers {model['layers']}, "
          f"heads {model['heads']}, seq {model['seq']}, micro_batch {mini[0]['deck']['train']['micro_batch']}; "
          f"{a.threads} thread(s); median (min-max) of {a.rounds} alternating rounds")
    print("FLOPs counted as 6*N*tokens + 12*L*d*seq*tokens, N = parameters in matrix products")
    print(f"{'':10s} {'tokens/s':>24s} {'GFLOP/s':>22s}")
    print(f"{'mini5d':10s} {cell(m_tps_r, '{:.1f}'):>24s} {cell(m_flops_r, '{:.2f}'):>22s}")
    print(f"{'pytorch':10s} {cell(p_tps_r, '{:.1f}'):>24s} {cell(p_flops_r, '{:.2f}'):>22s}")
    ratios = [x / y for x, y in zip(m_tps_r, p_tps_r)]
    print(f"ratio mini5d/pytorch (tokens/s) = {m_tps / p_tps:.3f} (per round {min(ratios):.3f}-{max(ratios):.3f})")
    if a.json:
        print(json.dumps({"mini5d_tokens_per_s": m_tps, "pytorch_tokens_per_s": p_tps,
                          "ratio": m_tps / p_tps, "threads": a.threads}))


if __name__ == "__main__":
    main()
