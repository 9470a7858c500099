#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Fits the free figures of the validation clusters on the `fit` runs of
inputs/validation/ and writes them into the cluster files (inputs/clusters/).

Only `mini5d-plan --validate FILE --rows fit --json` is ever called: the `test` runs are
not evaluated, so nothing here can be tuned on them. The objective is the mean squared
log error ln(published step / predicted step)^2 over a cluster's fit runs, minimised by
coordinate descent (golden-section search in log space over each figure's bounds, a
few sweeps), the figures starting at the middle of their bounds, not at the file's value.

What is free, per cluster (FITS below):
  selene-a100-80-8   sustained BF16 GEMM rate, intra- and inter-node bus bandwidth,
                     on the ten SC21 Table 1 runs;
  dgx-h100-ib-8      sustained BF16 GEMM rate, inter-node bus bandwidth and the hidden
                     fraction of TP traffic (software.tp_overlap) on the fit runs of the
                     DGX Cloud benchmarking recipes (dgxc-h100-*.yaml: NeMo on EOS, which
                     overlaps TP communication); its NVLink rate is the datasheet's times
                     Selene's fitted efficiency (the fit runs cannot tell it from the
                     hidden fraction). The fused attention kernel's rate
                     (software.fused_attention_tflops) is not free: with it the six fit
                     runs trade it against the GEMM rate (a trial fit: GEMM 953.5
                     TFLOP/s, 96% of peak, attention 219), figures no H100 reaches;
  meta-h100-roce-8   sustained BF16 GEMM rate on the Llama 3 8K / 8192-GPU run; its
                     link bandwidths are the datasheet rates times the efficiencies
                     fitted on Selene (one fit run cannot tell three figures apart);
  frontier-mi250x-8  sustained BF16 GEMM rate on the one fit run of
                     lumi-megatron-deepspeed.yaml (175B on 16 LUMI-G nodes, Frontier's
                     node); its link bandwidths are the datasheet rates times the
                     efficiencies fitted on Selene, as for Meta's cluster;
  elcapitan-mi300a-4 no fit runs (no published MI300A run with its whole layout is in
                     inputs/validation/): nothing is free; the sustained BF16 rate and
                     both link rates are the datasheet rates times Selene's fitted
                     efficiencies, carried over, not fitted on AMD hardware.
Latencies, overlap fractions (but dgx-h100-ib-8's TP overlap) and per-call costs stay the
files' stated assumptions: the fit runs do not move them measurably (they are
large-message, large-GEMM runs).

usage: perf/fit_cluster.py [--plan build/apps/mini5d-plan] [--write | --check]
Without --write it prints the fitted figures and the fit-row errors only; --check exits 1
when a cluster file's figure is not what the fit gives (CTest plan.fit_cluster_check).
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLUSTERS = os.path.join(ROOT, "inputs", "clusters")
VALIDATION = os.path.join(ROOT, "inputs", "validation")

# Datasheet rates the link efficiencies are relative to (GB/s per GPU per direction):
# A100 NVLink3 300, HDR 200 Gb/s = 25; H100 NVLink4 450, 400 Gb/s = 50.
FITS = [
    {"cluster": "selene-a100-80-8.yaml", "files": ["megatron-sc21.yaml"],
     "free": {"device.sustained_tflops.bf16": (150.0, 312.0),
              "links.intra_node.bandwidth_gbs": (100.0, 300.0),
              "links.inter_node.bandwidth_gbs": (5.0, 25.0)},
     "datasheet": {"device.sustained_tflops.bf16": 312.0,
                   "links.intra_node.bandwidth_gbs": 300.0,
                   "links.inter_node.bandwidth_gbs": 25.0}},
    # NeMo on EOS overlaps its TP traffic (userbuffers), and its fit runs cannot tell the
    # NVLink rate from the hidden fraction: the fraction is free, NVLink carried over.
    {"cluster": "dgx-h100-ib-8.yaml",
     "files": ["dgxc-h100-llama31.yaml", "dgxc-h100-nemotron4.yaml", "dgxc-h100-gpt3.yaml"],
     "free": {"device.sustained_tflops.bf16": (400.0, 989.0),
              "links.inter_node.bandwidth_gbs": (10.0, 50.0),
              "software.tp_overlap": (0.01, 1.0)},
     "datasheet": {"device.sustained_tflops.bf16": 989.0,
                   "links.intra_node.bandwidth_gbs": 450.0,
                   "links.inter_node.bandwidth_gbs": 50.0},
     "efficiency_from": {"links.intra_node.bandwidth_gbs": "selene-a100-80-8.yaml"}},
    # One fit run: only the GEMM rate is free; the links as Selene's efficiencies.
    {"cluster": "meta-h100-roce-8.yaml", "files": ["llama3-405b.yaml"],
     "free": {"device.sustained_tflops.bf16": (400.0, 989.0)},
     "datasheet": {"links.intra_node.bandwidth_gbs": 450.0,
                   "links.inter_node.bandwidth_gbs": 50.0},
     "efficiency_from": {"links.intra_node.bandwidth_gbs": "selene-a100-80-8.yaml",
                         "links.inter_node.bandwidth_gbs": "selene-a100-80-8.yaml"}},
    # MI250X per GCD: BF16 191.5 TFLOP/s, one Infinity Fabric link 50 GB/s (the slowest hop
    # of a ring over the node's 8 GCDs), Slingshot-11 25 GB/s per NIC (a rail). One fit run
    # (LUMI-G, the same node): as for Meta's cluster, only the GEMM rate is free, the links
    # the datasheet rates times Selene's efficiencies.
    {"cluster": "frontier-mi250x-8.yaml", "files": ["lumi-megatron-deepspeed.yaml"],
     "free": {"device.sustained_tflops.bf16": (75.0, 191.5)},
     "datasheet": {"device.sustained_tflops.bf16": 191.5,
                   "links.intra_node.bandwidth_gbs": 50.0,
                   "links.inter_node.bandwidth_gbs": 25.0},
     "efficiency_from": {"links.intra_node.bandwidth_gbs": "selene-a100-80-8.yaml",
                         "links.inter_node.bandwidth_gbs": "selene-a100-80-8.yaml"}},
    # AMD without fit runs: every figure as the datasheet times Selene's efficiency.
    # MI300A: BF16 980.6, 128 GB/s per direction between APUs, Slingshot-11 NICs.
    {"cluster": "elcapitan-mi300a-4.yaml", "files": [], "free": {},
     "datasheet": {"device.sustained_tflops.bf16": 980.6,
                   "links.intra_node.bandwidth_gbs": 128.0,
                   "links.inter_node.bandwidth_gbs": 25.0},
     "efficiency_from": {k: "selene-a100-80-8.yaml" for k in
                         ("device.sustained_tflops.bf16", "links.intra_node.bandwidth_gbs",
                          "links.inter_node.bandwidth_gbs")}},
]


def set_field(text, path, value, note):
    """The YAML text with the scalar at dotted `path` set to `value` (block style,
    one key per line), its comment replaced by `note`."""
    keys, depth, out, done = path.split("."), 0, [], False
    for line in text.split("\n"):
        m = re.match(r"^(\s*)([\w-]+):(.*)$", line)
        if m and not done and depth < len(keys) and m.group(2) == keys[depth] and \
                len(m.group(1)) == 2 * depth:
            depth += 1
            if depth == len(keys):
                line = "%s%s: %s" % (m.group(1), keys[-1], fmt(value))
                line = (line + " ").ljust(29) + "# " + note
                done = True
        out.append(line)
    if not done:
        sys.exit("fit_cluster.py: %s not found in the cluster file" % path)
    return "\n".join(out)


def fmt(v):
    return ("%.4g" % v) if v < 1000 else ("%.0f" % v)


def fit_errors(plan, text, files):
    """The fit rows' log errors with the cluster file `text`."""
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(text)
        path = f.name
    try:
        errs = []
        for name in files:
            out = subprocess.run([plan, "--validate", os.path.join(VALIDATION, name),
                                  "--cluster", path, "--rows", "fit", "--json"],
                                 capture_output=True, text=True, check=True).stdout
            for line in out.splitlines():
                row = json.loads(line)
                assert row["role"] == "fit"
                ok = row["predicted_step"] > 0
                errs.append(math.log(row["published_step"] / row["predicted_step"]) if ok else 5.0)
        return errs
    finally:
        os.unlink(path)


def golden(f, lo, hi, tol=0.002):
    """Minimum of f on [lo, hi] (log space), to a relative tolerance."""
    a, b, g = math.log(lo), math.log(hi), (math.sqrt(5) - 1) / 2
    c, d = b - g * (b - a), a + g * (b - a)
    fc, fd = f(math.exp(c)), f(math.exp(d))
    while b - a > tol:
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - g * (b - a)
            fc = f(math.exp(c))
        else:
            a, c, fc = c, d, fd
            d = a + g * (b - a)
            fd = f(math.exp(d))
    return math.exp((a + b) / 2)


def fit(plan, spec, base, note):
    free = spec["free"]
    if not free:  # nothing to fit (no fit runs): the file keeps the carried-over figures
        return {}, []
    values = {k: math.sqrt(lo * hi) for k, (lo, hi) in free.items()}

    def text_with(vals):
        t = base
        for k, v in vals.items():
            t = set_field(t, k, v, note)
        return t

    def loss(vals):
        e = fit_errors(plan, text_with(vals), spec["files"])
        return sum(x * x for x in e) / len(e)

    for _ in range(3 if len(free) > 1 else 1):
        for k, (lo, hi) in free.items():
            values[k] = golden(lambda x: loss({**values, k: x}), lo, hi)
    return values, fit_errors(plan, text_with(values), spec["files"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--plan", default=os.path.join(ROOT, "build", "apps", "mini5d-plan"))
    ap.add_argument("--write", action="store_true", help="write the fitted cluster files")
    ap.add_argument("--check", action="store_true", help="exit 1 unless the files hold the fit")
    a = ap.parse_args()
    stale = []
    efficiency = {}
    for spec in FITS:
        path = os.path.join(CLUSTERS, spec["cluster"])
        base = open(path).read()
        rows = ", ".join(spec["files"])
        # Datasheet x the efficiency fitted on another cluster, figure by figure.
        for k, other in spec.get("efficiency_from", {}).items():
            rate, src = spec["datasheet"][k], efficiency[other][k]
            base = set_field(base, k, rate * src,
                             "fitted: %g x %.3f (%s's fitted efficiency)" % (rate, src, other.split(".")[0]))
        note = "fitted by perf/fit_cluster.py on the fit runs of %s" % rows
        values, errs = fit(a.plan, spec, base, note)
        efficiency[spec["cluster"]] = {k: values[k] / r for k, r in spec["datasheet"].items()
                                       if k in values}
        print("%s (%s):" % (spec["cluster"], "fit runs of " + rows if rows else "no fit runs"))
        for k, v in values.items():
            print("  %s = %s" % (k, fmt(v)))
        if errs:
            print("  fit-run errors: %s" % ", ".join("%+.1f%%" % (100 * (math.exp(e) - 1)) for e in errs))
        else:
            print("  no fit runs: datasheet x Selene's fitted efficiencies only")
        text = base
        for k, v in values.items():
            text = set_field(text, k, v, note)
        if a.write:
            open(path, "w").write(text)
        elif a.check and text != open(path).read():
            stale.append(spec["cluster"])
    if stale:
        sys.exit("fit_cluster.py: not what the fit runs give (run perf/fit_cluster.py --write): " +
                 ", ".join(stale))


if __name__ == "__main__":
    main()
