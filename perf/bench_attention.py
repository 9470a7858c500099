#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Attention-core benchmark: blockwise against full attention at c = 1, same deck, same batch.

One run, one table per sequence length (--seqs, default 1024 and 2048; the micro-batch
shrinks as the sequence grows, so every row trains --tokens tokens a step):
  * tokens/s of `model.attention=blockwise` (tiles of 64 rows, online softmax, keeps a
    log-sum-exp per row) and `model.attention=full` (keeps the seq x seq probabilities),
    1 rank pinned to core 0, one BLAS thread; the rows alternate for --rounds rounds and
    each figure is the median over rounds (steps 2..n of each run), min-max beside it;
  * blockwise's speed over full's (target: >= 1.0, "no slower"), each round's ratio
    taken inside the round so a slow spell of the machine hits both rows alike;
  * the step's share in the attention kernels (attention_gemm + attention families of
    the report's kernel table);
  * activation MiB kept for the backward plus the backward's work buffers, predicted
    (the planner's formulas) and measured (the model's ledger); their difference is the
    T^2 term (target: blockwise below full by it).
Full attention's activation budget is lifted (train.activation_budget_mib=0).
"""
import json

from bench_util import activations_mib, bench_parser, median, rate_cell, steady, train

ATTENTION_FAMILIES = ("attention_gemm", "attention")


def attention_share(report):
    """Share of the step the attention kernels take, from the report's kernel table."""
    fams = (report.get("kernels") or {}).get("families") or []
    return sum(f["share"] for f in fams if f["name"] in ATTENTION_FAMILIES)


def main():
    ap = bench_parser(__doc__, "llama-small.yaml", 4, 3)
    ap.add_argument("--seqs", default="1024,2048", help="comma-separated sequence lengths (>= 1024)")
    ap.add_argument("--tokens", type=int, default=2048, help="tokens per step (micro_batch = tokens / seq)")
    a = ap.parse_args()
    if a.rounds < 3:
        ap.error("--rounds must be at least 3 (a median of fewer rounds is not a median)")
    seqs = [int(s) for s in a.seqs.split(",")]
    if any(s < 1024 or a.tokens % s for s in seqs):
        ap.error("--seqs: each at least 1024 and dividing --tokens")
    rows = {"blockwise": ["model.attention=blockwise"],
            "full": ["model.attention=full", "train.activation_budget_mib=0"]}
    out = {}
    for seq in seqs:
        common = [f"train.steps={a.steps}", f"model.seq={seq}", f"train.micro_batch={a.tokens // seq}",
                  "parallel.c=1"]
        reports = {name: [] for name in rows}
        for _ in range(a.rounds):
            for name, over in rows.items():
                reports[name].append(train(a.app, a.deck, 1, common + over, pin_core0=True))
        tps = {name: [steady(r, "tokens_per_s") for r in rs] for name, rs in reports.items()}
        ratios = [b / f for b, f in zip(tps["blockwise"], tps["full"])]
        res = {"tokens_per_s": tps, "ratio_per_round": ratios, "ratio": median(ratios)}
        print(f"# attention core, deck {a.deck.split('/')[-1]}, seq {seq}, micro-batch {a.tokens // seq}, "
              f"1 rank on core 0, {a.steps} steps per run, {a.rounds} alternating rounds")
        print("| core | tokens/s (min-max) | attention share | activations MiB pred / meas |")
        print("|---|---|---|---|")
        for name, rs in reports.items():
            share = median([attention_share(r) for r in rs])
            pred, meas = activations_mib(rs[-1], "predicted"), activations_mib(rs[-1], "measured")
            res[name] = {"attention_share": share, "activations_mib_predicted": pred,
                         "activations_mib_measured": meas}
            print(f"| {name} | {rate_cell(tps[name])} | {100 * share:.1f}% | {pred:.2f} / {meas:.2f} |")
        saved = res["full"]["activations_mib_measured"] - res["blockwise"]["activations_mib_measured"]
        print(f"blockwise / full: {res['ratio']:.3f} (rounds {min(ratios):.3f}-{max(ratios):.3f}; "
              f"target >= 1.0: {'met' if res['ratio'] >= 1.0 else 'NOT met'}); "
              f"activations {saved:.2f} MiB lower\n")
        out[seq] = res
    if a.json:
        print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
