#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The app against the oracle: `mini5d train` itself (fp32, any layout, its own loop,
sampler, pipeline schedule, ZeRO, communication and checkpoints) replayed step by step
by the PyTorch reference model in fp64.

Each step s starts from the app's parameters before it: the initial ones (the fp64
dump's: the app's fp32 initial values are the same draws rounded) for s = 0, then the
checkpoint the app saved after step s. On the dump's tokens for step s, PyTorch gives
the token loss, the load-balancing loss and the gradient norm, which must match the
app's report, then updates with its AdamW (its own moments across steps) and must land
where the app's checkpoint of step s + 1 is.

Bounds, for fp32 against fp64 (docs/testing.md, "The PyTorch oracle"):
  loss, load-balancing loss: relative 1e-6 (the report prints 9 significant digits);
  gradient norm: relative 2e-6;
  (measured on the five layouts: 1.1e-8 and 9.9e-8 at most);
  update: per tensor, ||app step - torch step|| <= 5e-3 ||torch step||, where a step
    is the parameters after the update minus those before. Adam divides each
    gradient by its own running scale, so an element whose gradient is a rounding
    error of the fp32 sums can move by up to lr either way: a norm over the tensor,
    not an element bound. A wrong sum, a dropped micro-batch or a shifted mask moves
    whole tensors by far more (docs/testing.md lists what was measured).
    The key rows of the QKV bias are left out of that comparison: adding a constant
    to every key adds q.b_k to a whole row of scores, which the softmax cancels, so
    their gradient is zero in exact arithmetic and fp32 rounding elsewhere; Adam turns
    that noise into steps of up to lr. What they must do instead is stay within
    lr * (steps so far) of where they started, the most Adam can move anything.
usage: check_app.py DUMPDIR CKPTDIR REPORT --label NAME
"""
import argparse
import json
import math
import os
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from replay import Checks, Replay  # noqa: E402

LOSS_REL, NORM_REL, STEP_REL = 1e-6, 2e-6, 2e-3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dump")
    ap.add_argument("ckpt")
    ap.add_argument("report")
    ap.add_argument("--label", default="")
    a = ap.parse_args()
    r, c = Replay(a.dump), Checks()
    meta, rel, start = r.meta, c.rel, r.initial
    with open(a.report) as f:
        report = json.load(f)

    def saved(step):
        path = os.path.join(a.ckpt, f"step-{step:08d}.h5")
        with h5py.File(path, "r") as f:
            return {t["name"]: np.asarray(f["model/" + t["name"].replace(".", "/")], dtype=np.float64)
                    for t in r.tensors}

    steps = report["steps"]
    if len(steps) != len(meta["steps_run"]):
        c.failures.append(f"the app ran {len(steps)} steps, the deck asks {len(meta['steps_run'])}")
    worst = {"loss": 0.0, "norm": 0.0, "step": 0.0}
    lr_sum = 0.0
    after = None
    for s, mine in enumerate(steps):
        before = start if s == 0 else after  # the checkpoint after step s, read last round
        r.start_from(before)
        ce, aux, norm = r.forward_backward(s)
        e = rel(mine.get("loss"), ce)
        worst["loss"] = max(worst["loss"], e)
        c.check(f"step {s + 1} loss (app {mine.get('loss')}, torch {ce:.9g})", e, LOSS_REL)
        if meta["experts"] > 0:
            e = rel(mine.get("moe", {}).get("aux_loss"), aux)
            worst["loss"] = max(worst["loss"], e)
            c.check(f"step {s + 1} load-balancing loss (torch {aux:.9g})", e, LOSS_REL)
        e = rel(mine.get("grad_norm"), norm)
        worst["norm"] = max(worst["norm"], e)
        c.check(f"step {s + 1} gradient norm (app {mine.get('grad_norm')}, torch {norm:.9g})", e, NORM_REL)
        lr, _ = r.update(s, norm)
        c.check(f"step {s + 1} learning rate", rel(mine.get("lr"), lr), 1e-7)
        after = saved(s + 1)
        lr_sum += lr
        for name, p in r.params.items():
            torch_step = p.detach().numpy() - before[name]
            app_step = after[name] - before[name]
            if name.endswith("attn.qkv.bias"):
                keys = slice(meta["d_model"], meta["d_model"] + meta["kv_heads"] * (meta["d_model"] // meta["heads"]))
                moved = float(np.max(np.abs(after[name][keys] - start[name][keys])))
                c.check(f"step {s + 1} key bias moved {moved:.2e} (lr so far {lr_sum:.2e})",
                        moved / lr_sum if math.isfinite(moved) else math.inf, 1.0)
                torch_step, app_step = np.delete(torch_step, keys), np.delete(app_step, keys)
            size = float(np.linalg.norm(torch_step))
            e = float(np.linalg.norm(app_step - torch_step)) / max(size, 1e-300)
            if not np.all(np.isfinite(after[name])):
                e = math.inf
            worst["step"] = max(worst["step"], e)
            c.check(f"step {s + 1} update of {name} (||torch step|| {size:.2e})", e, STEP_REL)
    return c.verdict(
        f"oracle app {a.label}: {len(steps)} steps, {len(r.tensors)} tensors; worst: loss rel {worst['loss']:.2e} "
        f"(bound {LOSS_REL:.0e}), gradient norm rel {worst['norm']:.2e} (bound {NORM_REL:.0e}), "
        f"update rel {worst['step']:.2e} (bound {STEP_REL:.0e})")


if __name__ == "__main__":
    sys.exit(main())
