# SPDX-License-Identifier: BSD-3-Clause
"""What the benchmarks share: one mini5d training run read back from its JSON report, and
the medians they report.

Each run happens in its own temporary directory (the report and the checkpoint
directory every run creates go there), with one BLAS and OpenMP thread per rank.
"""
import argparse
import json
import os
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def one_thread_env():
    """The environment every benchmarked run gets: one BLAS and one OpenMP thread per rank."""
    return dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")


def train(app, deck, ranks, overrides, pin_core0=False):
    """Runs `mpiexec -n ranks app train deck overrides...`; returns its JSON report."""
    app, deck = os.path.abspath(app), os.path.abspath(deck)  # the run starts in its own directory
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "report.json")
        cmd = ["mpiexec", "-n", str(ranks), app, "train", deck, f"output.report={report}",
               "output.log_every=1000"] + overrides
        if pin_core0:
            cmd = ["taskset", "-c", "0"] + cmd
        subprocess.run(cmd, check=True, env=one_thread_env(), stdout=subprocess.DEVNULL, cwd=tmp)
        with open(report) as f:
            return json.load(f)


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])


def steady(report, key):
    """Median of a per-step figure over steps 2..n (the first pays page faults, BLAS set-up)."""
    steps = report["steps"][1:] or report["steps"]
    return median([s[key] for s in steps])


def exposed_share(report, axis):
    """Median over steps 2..n of the share of the step exposed in `axis`'s communication
    (time inside MPI that no computation hid)."""
    steps = report["steps"][1:] or report["steps"]
    return median([s.get("exposed_by_axis", {}).get(axis, 0.0) / s["seconds"] for s in steps])


MIB = 1024.0 * 1024.0


def activations_mib(report, kind):
    """Activation MiB per rank, kept for the backward plus the backward's work buffers:
    kind "predicted" (the planner's formulas) or "measured" (the model's ledger)."""
    a = report["memory_bytes"][f"activations_{kind}"]
    return (a["kept"] + a["workspace"]) / MIB


def tokens_per_s(reports):
    """{row: [steady tokens/s of each round]} from {row: [report of each round]}."""
    return {name: [steady(r, "tokens_per_s") for r in rs] for name, rs in reports.items()}


def rate_cell(xs):
    """A table cell: the median of xs and, in brackets, their spread."""
    return f"{median(xs):.1f} ({min(xs):.1f}-{max(xs):.1f})"


def bench_parser(doc, deck, steps, rounds, steps_help=None):
    """The options every layout benchmark takes: --deck, --app, --steps, --rounds, --json."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--deck", default=os.path.join(ROOT, "inputs", deck))
    ap.add_argument("--app", default=os.path.join(ROOT, "build", "apps", "mini5d"))
    ap.add_argument("--steps", type=int, default=steps, help=steps_help)
    ap.add_argument("--rounds", type=int, default=rounds)
    ap.add_argument("--json", action="store_true")
    return ap


def batch_args(doc, deck, steps):
    """bench_parser's options and --micro-batch m, the global batch of every row, parsed."""
    ap = bench_parser(doc, deck, steps, 3)
    ap.add_argument("--micro-batch", type=int, default=8)
    return ap.parse_args()


def baseline_rows(m):
    """The rows a layout is measured against, for a global batch of m sequences: 1 rank
    confined to one core, and d=2 (m/2 sequences per rank) on two."""
    return [("1 rank", 1, [f"train.micro_batch={m}"], True),
            ("d=2", 2, [f"train.micro_batch={m // 2}", "parallel.d=2"], False)]


def title(what, a, batch):
    """The table's title line: the deck, the batch, steps and rounds, what is a median."""
    return (f"# {what}, deck {os.path.relpath(a.deck, ROOT)}: {batch}, {a.steps} steps per run, "
            f"{a.rounds} alternating rounds; medians over steps 2..{a.steps} and over rounds")


def alternate(rows, rounds, app, deck, common):
    """Runs each row (name, ranks, overrides, pin to core 0) once per round, the rows
    alternating so that a slow spell of the machine hits every row alike; returns
    {name: [report per round]}."""
    reports = {name: [] for name, *_ in rows}
    for _ in range(rounds):
        for name, ranks, over, pin in rows:
            reports[name].append(train(app, deck, ranks, common + over, pin_core0=pin))
    return reports
