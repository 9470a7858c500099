# SPDX-License-Identifier: BSD-3-Clause
"""What the benchmarks share: one mini5d training run read back from its JSON report, and
the medians they report.

Each run happens in its own temporary directory (the report and the checkpoint
directory every run creates go there), with one BLAS and OpenMP thread per rank.
"""
import json
import os
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def train(app, deck, ranks, overrides, pin_core0=False):
    """Runs `mpiexec -n ranks app train deck overrides...`; returns its JSON report."""
    app, deck = os.path.abspath(app), os.path.abspath(deck)  # the run starts in its own directory
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "report.json")
        cmd = ["mpiexec", "-n", str(ranks), app, "train", deck, f"output.report={report}",
               "output.log_every=1000"] + overrides
        if pin_core0:
            cmd = ["taskset", "-c", "0"] + cmd
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
        subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL, cwd=tmp)
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
