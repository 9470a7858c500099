# SPDX-License-Identifier: BSD-3-Clause
"""The oracle's second implementation of mini5d's model, in PyTorch, written from the
model's definition in docs/ (inputs.md, parallelism.md, precision.md) and not from its
kernels: the only thing it shares with mini5d is the parameter names and the flat
buffer's order (tensor offsets and shapes come from the dump). PyTorch's autograd
gives the gradients, torch.optim.AdamW the update.

The model, as documented:
  x = wte[tokens] (+ wpe[positions] with learned positions)
  per block l:  x += proj(attention(qkv(norm1(x))))
                x += mlp(norm2(x))    or the mixture of experts when (l+1) % moe_every == 0
  logits = lnf(x) @ W^T, W = lm_head.weight (wte when tied); loss = mean cross-entropy.
  qkv: one [D + 2*Dkv, D] matrix, rows q | k | v; query head h reads key/value head
       h // (heads / kv_heads); causal softmax(q k^T / sqrt(hd)) v.
  rope: pairs (2i, 2i+1) of each head turned by pos * theta^(-2i/hd), on q and k.
  norm: LayerNorm (biased variance, eps 1e-5, gain and bias) or RMSNorm (eps 1e-5, gain).
  mlp:  gelu: proj(gelu_tanh(fc x)); swiglu: proj(silu(gate x) * (up x)), gate_up one
        [2F, D] matrix, gate rows first.
  moe:  p = softmax(router x); the top_k experts by p, their p renormalised to sum 1;
        out = sum_j w_j expert_j(x) (each expert an mlp as above, weights [E, ...]);
        load-balancing loss per sequence E * sum_e f_e P_e, f_e the fraction of the
        sequence's top_k assignments routed to e (no gradient), P_e its mean p; the
        objective adds aux_loss_coef times its mean over sequences, summed over layers.
"""
import math

import torch
import torch.nn.functional as F


def rotate_pairs(x, pos, theta):
    """RoPE on [b, h, t, hd] with interleaved pairs (2i, 2i+1)."""
    hd = x.shape[-1]
    inv = theta ** (-torch.arange(0, hd, 2, dtype=torch.float64) / hd)
    ang = torch.outer(pos.to(torch.float64), inv)  # [t, hd/2]
    cos, sin = ang.cos(), ang.sin()
    xe, xo = x[..., 0::2], x[..., 1::2]
    ye, yo = xe * cos - xo * sin, xe * sin + xo * cos
    return torch.stack((ye, yo), dim=-1).flatten(-2)


class Reference:
    """The model of one dump's meta.json over a dict of named fp64 tensors."""

    def __init__(self, meta):
        self.m = meta

    def norm(self, p, name, x):
        if self.m["norm"] == "rmsnorm":
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * p[name + ".weight"]
        return F.layer_norm(x, (x.shape[-1],), p[name + ".weight"], p.get(name + ".bias"), eps=1e-5)

    def linear(self, p, name, x):
        return F.linear(x, p[name + ".weight"], p.get(name + ".bias"))

    def attention(self, p, b, x):
        m = self.m
        B, T, D = x.shape
        H, K = m["heads"], m["kv_heads"]
        hd = D // H
        q, k, v = self.linear(p, b + "attn.qkv", x).split((D, K * hd, K * hd), dim=-1)
        q = q.view(B, T, H, hd).transpose(1, 2)
        k = k.view(B, T, K, hd).transpose(1, 2)
        v = v.view(B, T, K, hd).transpose(1, 2)
        if m["positions"] == "rope":
            pos = torch.arange(T)
            q, k = rotate_pairs(q, pos, m["rope_theta"]), rotate_pairs(k, pos, m["rope_theta"])
        k, v = k.repeat_interleave(H // K, dim=1), v.repeat_interleave(H // K, dim=1)
        s = q @ k.transpose(-1, -2) / math.sqrt(hd)
        s = s.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
        y = torch.softmax(s, dim=-1) @ v
        return self.linear(p, b + "attn.proj", y.transpose(1, 2).reshape(B, T, D))

    def mlp(self, w_in, b_in, w_out, b_out, x):
        h = F.linear(x, w_in, b_in)
        if self.m["mlp"] == "swiglu":
            gate, up = h.split(self.m["ffn"], dim=-1)
            h = F.silu(gate) * up
        else:
            h = F.gelu(h, approximate="tanh")
        return F.linear(h, w_out, b_out)

    def moe(self, p, b, x):
        """Returns the output and the layer's load-balancing loss (mean over sequences)."""
        m = self.m
        B, T, D = x.shape
        E, k = m["experts"], m["top_k"]
        rows = x.reshape(B * T, D)
        probs = torch.softmax(F.linear(rows, p[b + "moe.router.weight"]), dim=-1)  # [R, E]
        top_p, top_e = probs.topk(k, dim=-1)
        weights = top_p / top_p.sum(-1, keepdim=True)
        fc = "gate_up" if m["mlp"] == "swiglu" else "fc"
        out = torch.zeros_like(rows)
        for e in range(E):
            r, j = (top_e == e).nonzero(as_tuple=True)
            if r.numel() == 0:
                continue
            y = self.mlp(p[f"{b}moe.experts.{fc}.weight"][e], p[f"{b}moe.experts.{fc}.bias"][e] if m["bias"] else None,
                         p[f"{b}moe.experts.proj.weight"][e], p[f"{b}moe.experts.proj.bias"][e] if m["bias"] else None,
                         rows[r])
            out = out.index_add(0, r, weights[r, j].unsqueeze(-1) * y)
        counts = F.one_hot(top_e, E).sum(1).reshape(B, T, E).to(torch.float64)  # assignments per row
        f = counts.sum(1) / (T * k)                 # [B, E], no gradient
        P = probs.reshape(B, T, E).mean(1)          # [B, E]
        aux = (E * (f * P).sum(-1)).mean()
        return out.reshape(B, T, D), aux

    def loss(self, p, inputs, targets):
        """Mean token cross-entropy, and the load-balancing loss (already times its coefficient)."""
        m = self.m
        B, T = inputs.shape
        x = p["wte"][inputs]
        if m["positions"] != "rope":
            x = x + p["wpe"][:T]
        aux = torch.zeros((), dtype=torch.float64)
        fc = "gate_up" if m["mlp"] == "swiglu" else "fc"
        for l in range(m["layers"]):
            b = f"blocks.{l}."
            x = x + self.attention(p, b, self.norm(p, b + "ln1", x))
            h = self.norm(p, b + "ln2", x)
            if m["experts"] > 0 and (l + 1) % m["moe_every"] == 0:
                y, a = self.moe(p, b, h)
                aux = aux + a
            else:
                y = self.mlp(p[b + f"mlp.{fc}.weight"], p.get(b + f"mlp.{fc}.bias"), p[b + "mlp.proj.weight"],
                             p.get(b + "mlp.proj.bias"), h)
            x = x + y
        head = p["wte"] if m["tie_embeddings"] else p["lm_head.weight"]
        logits = self.norm(p, "lnf", x) @ head.T
        ce = F.cross_entropy(logits.reshape(B * T, -1), targets.reshape(-1))
        return ce, m["aux_loss_coef"] * aux if m["experts"] > 0 else aux


def learning_rate(meta, step):
    """Linear warm-up to the peak over `warmup` steps, then a cosine to min_lr at the last step."""
    peak, floor, warm, total = meta["lr"], meta["min_lr"], meta["warmup"], meta["steps"]
    if step < warm:
        return peak * (step + 1) / warm
    decay = total - warm
    if decay <= 1:
        return peak
    t = min(1.0, (step - warm) / (decay - 1))
    return floor + 0.5 * (peak - floor) * (1 + math.cos(math.pi * t))
