# SPDX-License-Identifier: BSD-3-Clause
"""What both oracle checks share (check_fp64.py, check_app.py): the dump of
mini5d_oracle_fp64 read back, the reference model's parameters and torch's AdamW set up
from it, one step's forward and backward and its update, and the NaN-safe comparison
with its list of failures."""
import json
import math
import os

import numpy as np
import torch

from reference_model import Reference, learning_rate


class Checks:
    """Every comparison fails on a non-finite value on either side."""

    def __init__(self):
        self.failures = []

    def check(self, what, err, bound):
        ok = math.isfinite(err) and err <= bound  # a NaN never compares true
        if not ok:
            self.failures.append(f"{what}: {err:.3e} > {bound:.1e}")
        return ok

    @staticmethod
    def rel(a, b):
        if a is None or not (math.isfinite(a) and math.isfinite(b)):
            return math.inf
        return abs(a - b) / max(abs(b), 1e-300)

    def verdict(self, summary):
        print(summary)
        if not self.failures:
            return 0
        print(f"FAILED: {len(self.failures)} checks, first ones:")
        for f in self.failures[:20]:
            print("  " + f)
        return 1


class Replay:
    """The reference model on a dump: its parameters (from the initial ones), torch's
    AdamW with mini5d's per-tensor decay, and the dump's tokens."""

    def __init__(self, dump):
        torch.set_num_threads(1)
        self.dump = dump
        with open(os.path.join(dump, "meta.json")) as f:
            self.meta = json.load(f)
        self.ref = Reference(self.meta)
        self.tensors = self.meta["tensors"]
        init = self.read("init.f64")
        assert init.size == self.meta["numel"], (init.size, self.meta["numel"])
        self.initial = self.views(init)
        self.params = {n: torch.tensor(v, dtype=torch.float64, requires_grad=True) for n, v in self.initial.items()}
        m = self.meta
        groups = [{"params": [self.params[t["name"]]], "weight_decay": m["weight_decay"] if t["decay"] else 0.0}
                  for t in self.tensors]
        self.opt = torch.optim.AdamW(groups, lr=m["lr"], betas=(m["beta1"], m["beta2"]), eps=m["eps"])

    def read(self, name, dtype="<f8"):
        return np.fromfile(os.path.join(self.dump, name), dtype=dtype)

    def views(self, buf):
        """Named arrays of a flat buffer in mini5d's layout."""
        return {t["name"]: buf[t["offset"]:t["offset"] + int(np.prod(t["shape"]))].reshape(t["shape"])
                for t in self.tensors}

    def start_from(self, arrays):
        with torch.no_grad():
            for name, p in self.params.items():
                p.copy_(torch.from_numpy(arrays[name]))

    def forward_backward(self, step):
        """Step `step`'s objective on its tokens: token loss, load-balancing loss, and the
        gradient norm (the gradients stay on the parameters)."""
        G, T = self.meta["sequences"], self.meta["seq"]
        toks = self.read(f"tokens-{step}.i32", "<i4").reshape(2, G, T)
        inputs, targets = torch.from_numpy(toks[0].astype(np.int64)), torch.from_numpy(toks[1].astype(np.int64))
        self.opt.zero_grad(set_to_none=True)
        ce, aux = self.ref.loss(self.params, inputs, targets)
        (ce + aux).backward()
        norm = math.sqrt(sum(float((p.grad ** 2).sum()) for p in self.params.values()))
        return float(ce), float(aux), norm

    def update(self, step, norm):
        """Clips by the global norm and takes AdamW's step at the schedule's rate;
        returns (learning rate, clipping factor)."""
        lr = learning_rate(self.meta, step)
        clip = self.meta["grad_clip"]
        factor = clip / norm if clip > 0 and norm > clip else 1.0
        with torch.no_grad():
            for p in self.params.values():
                p.grad.mul_(factor)
        for gr in self.opt.param_groups:
            gr["lr"] = lr
        self.opt.step()
        return lr, factor
