#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The fp64 oracle: replays a mini5d_oracle_fp64 dump with the PyTorch reference model
(reference_model.py) on the same tokens and compares every step: the token loss, the
load-balancing loss, the pre-clip gradient norm, every gradient tensor, the learning
rate and the clipping factor, and every parameter tensor after the update.
Each step starts from mini5d's parameters before it (the initial ones, then those the
dump holds after the previous step): a free-running PyTorch trajectory would drift
from mini5d's by the fp32 rounding of mini5d's AdamW moments (below), about 1e-7 in
the gradients from the second step on, and hide a 1e-9 bug behind it. PyTorch's AdamW
keeps its own moments, from its own gradients, across the steps.

Bounds (docs/testing.md, "The PyTorch oracle"):
  loss, aux loss, gradient norm, clipping factor: relative 1e-12;
  gradients: per tensor, max |mini5d - torch| <= 1e-12 * max |torch| (over that tensor),
    plus 1e-16 absolute for a tensor whose gradient is near zero;
  (measured on the four cases: 8.5e-16 and 4.3e-15 at most: two fp64 implementations
  that sum in different orders);
  parameters: per element, |mini5d - torch| <= 1e-6 * lr of the step.
    AdamW's moments are fp32 in mini5d whatever the parameter type (optim/adamw.hpp),
    so each update m/(sqrt(v)+eps), at most about 1 in size, carries a relative
    rounding of about 1e-7; everything else is fp64.
Every check fails on a non-finite value on either side.
usage: check_fp64.py DUMPDIR [--label NAME]
"""
import argparse
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from replay import Checks, Replay  # noqa: E402

LOSS_REL = 1e-12
GRAD_REL, GRAD_ABS = 1e-12, 1e-16
PARAM_PER_LR = 1e-6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dump")
    ap.add_argument("--label", default="")
    a = ap.parse_args()
    r, c = Replay(a.dump), Checks()
    meta, rel = r.meta, c.rel
    worst = {"loss": 0.0, "grad": 0.0, "param": 0.0}
    clipped = 0
    for s, mine in enumerate(meta["steps_run"]):
        if s > 0:  # start the step where mini5d started it
            r.start_from(p5)
        ce, aux, norm = r.forward_backward(s)
        for what, m5, th in (("loss", mine["loss"], ce), ("grad_norm", mine["grad_norm"], norm)):
            e = rel(m5, th)
            worst["loss"] = max(worst["loss"], e)
            c.check(f"step {s} {what}", e, LOSS_REL)
        if meta["experts"] > 0:
            e = rel(mine["aux_loss"], aux)
            worst["loss"] = max(worst["loss"], e)
            c.check(f"step {s} aux_loss", e, LOSS_REL)
        g5 = r.views(r.read(f"grads-{s}.f64"))
        for name, p in r.params.items():
            gt = p.grad.numpy()
            big = float(np.max(np.abs(gt))) if gt.size else 0.0
            diff = float(np.max(np.abs(g5[name] - gt))) if np.all(np.isfinite(g5[name])) else math.inf
            e = diff / (GRAD_REL * big + GRAD_ABS) * GRAD_REL  # in units of the relative bound
            worst["grad"] = max(worst["grad"], e)
            c.check(f"step {s} gradient {name} (max |torch| {big:.2e})", e, GRAD_REL)
        lr, factor = r.update(s, norm)
        c.check(f"step {s} learning rate", rel(mine["lr"], lr), 1e-15)
        clipped += factor < 1.0
        c.check(f"step {s} clipping factor", rel(mine["clip_factor"], factor), LOSS_REL)
        p5 = r.views(r.read(f"params-{s}.f64"))
        for name, p in r.params.items():
            pt = p.detach().numpy()
            diff = float(np.max(np.abs(p5[name] - pt))) if np.all(np.isfinite(p5[name])) else math.inf
            e = diff / lr
            worst["param"] = max(worst["param"], e)
            c.check(f"step {s} parameters {name} (after the update; lr {lr:.3e})", e, PARAM_PER_LR)
    steps = len(meta["steps_run"])
    # The deck's threshold must be crossed on some steps and not on others, so that both
    # the clipped and the unclipped update are compared.
    if not 0 < clipped < steps:
        c.failures.append(f"clipping happened on {clipped} of {steps} steps: set train.grad_clip between the norms")
    return c.verdict(
        f"oracle fp64 {a.label}: {steps} steps, {len(r.tensors)} tensors, clipped on {clipped} of {steps} steps; "
        f"worst: loss/norm rel {worst['loss']:.2e} (bound {LOSS_REL:.0e}), gradient rel {worst['grad']:.2e} "
        f"(bound {GRAD_REL:.0e}), parameters {worst['param']:.2e} x lr (bound {PARAM_PER_LR:.0e})")


if __name__ == "__main__":
    sys.exit(main())
