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


def bench_parser(doc, deck, steps, rounds, steps_help=None):
    """The options every layout benchmark takes: --deck, --app, --steps, --rounds, --json."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--deck", default=os.path.join(ROOT, "inputs", deck))
    ap.add_argument("--app", default=os.path.join(ROOT, "build", "apps", "mini5d"))
    ap.add_argument("--steps", type=int, default=steps, help=steps_help)
    ap.add_argument("--rounds", type=int, default=rounds)
    ap.add_argument("--json", action="store_true")
    return ap


def alternate(rows, rounds, app, deck, common):
    """Runs each row (name, ranks, overrides, pin to core 0) once per round, the rows
    alternating so that a slow spell of the machine hits every row alike; returns
    {name: [report per round]}."""
    reports = {name: [] for name, *_ in rows}
    for _ in range(rounds):
        for name, ranks, over, pin in rows:
            reports[name].append(train(app, deck, ranks, common + over, pin_core0=pin))
    return reports
