#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""PyTorch peer of mini5d's model for perf/bench_throughput.py.

The same decoder as mini5d's dense model, in fp32 on the CPU:
  token and learned position embeddings; L pre-LayerNorm blocks
  (x += proj(attention(qkv(ln1(x)))), x += fc2(gelu_tanh(fc1(ln2(x))))) with a fused
  QKV projection, biases on every block linear, an explicit causal softmax attention
  (PyTorch 1.13 has no fused attention on the CPU), a final LayerNorm and an LM head
  without bias, untied from the token embedding unless --tied.
With --block llama, the Llama-style block mini5d builds from model.norm=rmsnorm,
model.mlp=swiglu, model.bias=false, model.positions=rope and model.kv_heads: RMSNorm
gains, no biases anywhere, rotary positions on q and k (base --rope-theta, the two
halves of each head rotated together) instead of a position table, grouped-query
attention (--kv-heads K/V heads, each shared by heads/kv-heads query heads; expanded
before the score product, as the written-out attention needs), and a SwiGLU MLP
(gate and up fused in one [2F, d] product, silu(gate) * up, then down).
One training step: zero the gradients, forward, mean cross-entropy over B*T targets,
backward, optional clipping of the global gradient norm (mini5d clips when its deck's
train.grad_clip > 0; the benchmark passes it), AdamW (decay on matrices and
embeddings only). Tokens are uniform random, drawn outside the timed region.

Model FLOPs per step: 6*N*tokens + 12*L*d*T*tokens with N the parameters of the
matrix products (block weights and the LM head; biases and LayerNorm gains included,
which is 0.2% more than mini5d counts on `small`): compare tokens/s.

--threads sets the OpenMP and OpenBLAS thread counts before torch loads (Debian's torch
hands its matrix products to OpenBLAS, whose pool ignores torch.set_num_threads).
--ddp N runs N processes under DistributedDataParallel with the gloo backend on
127.0.0.1, each with --batch sequences; tokens/s is then global (rank 0's steps).
--device cuda runs on the GPU (the GPU anchor of scripts/gpu-check.sh), with
--attention sdpa (torch.nn.functional.scaled_dot_product_attention, causal: the fused
flash or memory-efficient kernel PyTorch picks) and --autocast bf16 (matrix products
and attention in bf16 under torch.autocast, fp32 weights, optimizer and reductions):
what a PyTorch user gets on that GPU without writing a kernel. Steps are timed with the
device synchronised at both ends.
Output: a human summary and, with --json, one line `JSON {...}`.
"""
import argparse
import os
import sys


def options(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--vocab", type=int, required=True)
    ap.add_argument("--d-model", type=int, required=True)
    ap.add_argument("--layers", type=int, required=True)
    ap.add_argument("--heads", type=int, required=True)
    ap.add_argument("--seq", type=int, required=True)
    ap.add_argument("--ffn", type=int, default=0, help="MLP width (default 4 * d-model)")
    ap.add_argument("--batch", type=int, required=True, help="sequences per step per process")
    ap.add_argument("--steps", type=int, default=5, help="timed steps after the warm-up")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--tied", action="store_true", help="LM head shares the token embedding")
    ap.add_argument("--block", choices=("gpt2", "llama"), default="gpt2",
                    help="gpt2: LayerNorm, learned positions, GELU, biases; llama: RMSNorm, RoPE, SwiGLU, GQA, no bias")
    ap.add_argument("--kv-heads", type=int, default=0, help="K/V heads (llama; default: --heads)")
    ap.add_argument("--rope-theta", type=float, default=10000.0, help="rotary base (llama)")
    ap.add_argument("--grad-clip", type=float, default=0.0, help="clip the global gradient norm (0: off)")
    ap.add_argument("--lr", type=float, default=6e-4)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--ddp", type=int, default=1, help="processes under DistributedDataParallel (gloo)")
    ap.add_argument("--port", type=int, default=29631)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--device", default="cpu", help="cpu, or cuda (a GPU: ROCm builds of torch call it cuda too)")
    ap.add_argument("--attention", choices=("explicit", "sdpa"), default="explicit",
                    help="explicit: softmax(q k^T) v written out; sdpa: PyTorch's fused causal attention (torch >= 2.0)")
    ap.add_argument("--autocast", choices=("none", "bf16"), default="none",
                    help="bf16: matrix products and attention under torch.autocast in bf16")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    if a.d_model % a.heads:
        ap.error(f"--d-model {a.d_model} is not a multiple of --heads {a.heads}")
    a.kv_heads = a.kv_heads or a.heads
    if a.heads % a.kv_heads:
        ap.error(f"--kv-heads {a.kv_heads} does not divide --heads {a.heads}")
    if a.block == "llama" and (a.d_model // a.heads) % 2:
        ap.error(f"--block llama: the head width {a.d_model // a.heads} must be even (RoPE rotates pairs)")
    if a.steps < 1 or a.ddp < 1 or a.threads < 1:
        ap.error("--steps, --ddp and --threads must be at least 1")
    if a.device != "cpu" and a.ddp > 1:
        ap.error("--ddp runs gloo processes on the CPU: not with --device " + a.device)
    return a


OPTS = options()
# Before torch is imported: OpenBLAS sizes its pool when it loads.
os.environ["OMP_NUM_THREADS"] = str(OPTS.threads)
os.environ["OPENBLAS_NUM_THREADS"] = str(OPTS.threads)

import json  # noqa: E402
import math  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

if OPTS.attention == "sdpa" and not hasattr(F, "scaled_dot_product_attention"):
    sys.exit(f"peer: --attention sdpa needs torch >= 2.0 (this is {torch.__version__})")


def attend(q, k, v, mask):
    """Causal attention of [b, h, t, hd] q, k, v: written out (scores, additive mask,
    softmax, product), or PyTorch's fused kernel under --attention sdpa."""
    if OPTS.attention == "sdpa":
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    t, hd = q.shape[2], q.shape[3]
    scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(hd) + mask[:t, :t]
    return torch.matmul(torch.softmax(scores, dim=-1), v)


class Attention(nn.Module):
    def __init__(self, d, heads, seq):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        # Additive mask (-inf above the diagonal); an attribute, not a buffer, so DDP
        # has nothing to broadcast.
        self.mask = torch.full((seq, seq), float("-inf")).triu(1)

    def forward(self, x):
        b, t, d = x.shape
        hd = d // self.heads
        # [b, t, 3, heads, hd] -> three [b, heads, t, hd]
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, hd).permute(2, 0, 3, 1, 4)
        y = attend(q, k, v, self.mask)
        return self.proj(y.transpose(1, 2).reshape(b, t, d))


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate(x, cos, sin):
    """RoPE on [b, h, t, hd]: element i of the first half pairs with element i of the
    second, both turned by angle pos * theta^(-2i/hd)."""
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)


class GqaAttention(nn.Module):
    def __init__(self, d, heads, kv_heads, seq, theta):
        super().__init__()
        self.heads, self.kv_heads, self.hd = heads, kv_heads, d // heads
        self.qkv = nn.Linear(d, d + 2 * kv_heads * self.hd, bias=False)
        self.proj = nn.Linear(d, d, bias=False)
        self.mask = torch.full((seq, seq), float("-inf")).triu(1)
        inv = theta ** (-torch.arange(0, self.hd, 2, dtype=torch.float32) / self.hd)
        ang = torch.outer(torch.arange(seq, dtype=torch.float32), inv)  # [T, hd/2]
        self.cos, self.sin = ang.cos(), ang.sin()

    def forward(self, x):
        b, t, d = x.shape
        hd, kv = self.hd, self.kv_heads
        q, k, v = self.qkv(x).split((d, kv * hd, kv * hd), dim=-1)
        q = q.view(b, t, self.heads, hd).transpose(1, 2)
        k = k.view(b, t, kv, hd).transpose(1, 2)
        v = v.view(b, t, kv, hd).transpose(1, 2)
        cos, sin = self.cos[:t], self.sin[:t]
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        group = self.heads // kv
        if group > 1:
            k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        y = attend(q, k, v, self.mask)
        return self.proj(y.transpose(1, 2).reshape(b, t, d))


class LlamaBlock(nn.Module):
    def __init__(self, d, heads, kv_heads, seq, ffn, theta):
        super().__init__()
        self.ln1, self.ln2 = RMSNorm(d), RMSNorm(d)
        self.attn = GqaAttention(d, heads, kv_heads, seq, theta)
        self.ffn = ffn
        self.gate_up = nn.Linear(d, 2 * ffn, bias=False)
        self.fc2 = nn.Linear(ffn, d, bias=False)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        gate, up = self.gate_up(self.ln2(x)).split(self.ffn, dim=-1)
        return x + self.fc2(F.silu(gate) * up)


class Block(nn.Module):
    def __init__(self, d, heads, seq, ffn):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = Attention(d, heads, seq)
        self.fc1, self.fc2 = nn.Linear(d, ffn), nn.Linear(ffn, d)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))


class Decoder(nn.Module):
    def __init__(self, o):
        super().__init__()
        ffn = o.ffn or 4 * o.d_model
        llama = o.block == "llama"
        self.tok = nn.Embedding(o.vocab, o.d_model)
        self.pos = None if llama else nn.Embedding(o.seq, o.d_model)
        if llama:
            self.blocks = nn.ModuleList(LlamaBlock(o.d_model, o.heads, o.kv_heads, o.seq, ffn, o.rope_theta)
                                        for _ in range(o.layers))
        else:
            self.blocks = nn.ModuleList(Block(o.d_model, o.heads, o.seq, ffn) for _ in range(o.layers))
        self.ln_f = RMSNorm(o.d_model) if llama else nn.LayerNorm(o.d_model)
        self.head = nn.Linear(o.d_model, o.vocab, bias=False)
        if o.tied:
            self.head.weight = self.tok.weight
        # GPT-2 initialisation; residual projections scaled by 1/sqrt(2L).
        for name, p in self.named_parameters():
            if p.dim() >= 2:
                std = 0.02 / math.sqrt(2 * o.layers) if name.endswith(("proj.weight", "fc2.weight")) else 0.02
                nn.init.normal_(p, 0.0, std)
            elif name.endswith("bias"):
                nn.init.zeros_(p)

    def forward(self, tokens):
        x = self.tok(tokens)
        if self.pos is not None:
            x = x + self.pos(torch.arange(tokens.shape[1], device=tokens.device))
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln_f(x))


def matmul_params(model):
    """Parameters of the matrix products: everything but the two embeddings, plus the
    LM head's matrix once (tied or not)."""
    emb = {id(model.tok.weight)} | ({id(model.pos.weight)} if model.pos is not None else set())
    n = sum(p.numel() for p in model.parameters() if id(p) not in emb)
    if id(model.head.weight) in emb:  # tied: the head's matrix is the token embedding
        n += model.head.weight.numel()
    return n


def train(rank, o, out=None):
    torch.set_num_threads(o.threads)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass
    torch.manual_seed(o.seed)
    dev = torch.device(o.device)
    model = Decoder(o).to(dev)
    # The mask and the rotary tables are plain attributes (nothing for DDP to
    # broadcast), so .to() leaves them: move them by hand.
    for m in model.modules():
        for name in ("mask", "cos", "sin"):
            if isinstance(getattr(m, name, None), torch.Tensor):
                setattr(m, name, getattr(m, name).to(dev))
    runner = model
    if o.ddp > 1:
        import torch.distributed as dist
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ["MASTER_PORT"] = str(o.port)
        dist.init_process_group("gloo", rank=rank, world_size=o.ddp)
        runner = nn.parallel.DistributedDataParallel(model)
    params = list(model.parameters())
    groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": o.weight_decay},
              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=o.lr, betas=(0.9, 0.95), eps=1e-8)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    bf16 = o.autocast == "bf16"
    rng = torch.Generator().manual_seed(o.seed + 7919 * rank)
    step_s, losses = [], []
    for i in range(o.warmup + o.steps):
        batch = torch.randint(0, o.vocab, (o.batch, o.seq + 1), generator=rng)
        batch = batch.to(dev)
        inputs, targets = batch[:, :-1], batch[:, 1:]
        sync()
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device_type=dev.type, dtype=torch.bfloat16, enabled=bf16):
            logits = runner(inputs)
        loss = F.cross_entropy(logits.float().reshape(-1, o.vocab), targets.reshape(-1))
        loss.backward()
        if o.grad_clip > 0:
            nn.utils.clip_grad_norm_(params, o.grad_clip)
        opt.step()
        sync()
        if i >= o.warmup:
            step_s.append(time.perf_counter() - t0)
        losses.append(float(loss))
    if o.ddp > 1:
        import torch.distributed as dist
        dist.barrier()
        dist.destroy_process_group()
    if rank != 0:
        return
    tokens = o.batch * o.seq
    flops = 6 * matmul_params(model) * tokens + 12 * o.layers * o.d_model * o.seq * tokens
    med = statistics.median(step_s)
    res = {"torch": torch.__version__, "device": torch.cuda.get_device_name() if dev.type == "cuda" else "cpu",
           "attention": o.attention, "autocast": o.autocast,
           "threads": o.threads, "ddp": o.ddp, "batch_per_process": o.batch,
           "step_s_median": med, "step_s_min": min(step_s), "step_s_max": max(step_s),
           "tokens_per_s": o.ddp * tokens / med, "model_flops_per_s": o.ddp * flops / med,
           "matmul_params": matmul_params(model), "loss_first": losses[0], "loss_last": losses[-1]}
    print(f"peer: torch {torch.__version__}, {o.ddp} process(es) x {o.threads} thread(s), "
          f"median step {med * 1e3:.1f} ms over {len(step_s)}, {res['tokens_per_s']:.1f} tokens/s, "
          f"{res['model_flops_per_s'] * 1e-9:.2f} GFLOP/s")
    if o.json:
        print("JSON " + json.dumps(res))
    sys.stdout.flush()


def main():
    if OPTS.ddp > 1:
        import torch.multiprocessing as mp
        mp.spawn(train, args=(OPTS,), nprocs=OPTS.ddp, join=True)
    else:
        train(0, OPTS)


if __name__ == "__main__":
    main()
