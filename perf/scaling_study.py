#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Weak- and strong-scaling study on a Slurm cluster: write the jobs, submit them, collect.

  scaling_study.py write   --model M.yaml --cluster C.yaml --nodes 1,2,4,8 --out DIR
                           [--modes weak,strong] [--global-batch B] [--plan mini5d-plan]
  scaling_study.py submit  DIR [--steps N] [--sbatch-arg ARG ...]
  scaling_study.py collect DIR [--allow-missing]

write: for each mode and node count, mini5d-plan chooses the best layout and writes a
deck, an sbatch script and its prediction (JSON). Strong scaling keeps the global batch
(B sequences); weak scaling grows it with the nodes (B per node), so the work per device
stays the same. DIR/study.json lists the points.

submit: sbatch every script from DIR (--chdir DIR), each point with its own checkpoint
directory, and records the job ids in DIR/jobs.json. Arguments after --steps go to mini5d
as deck overrides (sbatch SCRIPT train.steps=N).

collect: reads each job's JSON report (the last start's, if it was requeued): its FOM
(median tokens/s over steps 2..n) and validity. Efficiency is against the smallest node
count of the same mode: weak, tokens/s per device over the base's; strong, the speed-up
over the node ratio. Beside each point, the planner's predicted tokens/s and the ratio
measured/predicted. Writes DIR/scaling.csv, DIR/scaling.md (the table) and
DIR/scaling.svg (tokens/s per device against nodes, measured and predicted, per mode).
Exit status 1 when a point has no report or an invalid FOM, unless --allow-missing.
"""
import argparse
import csv
import glob
import json
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def fail(msg):
    print(f"scaling_study: {msg}", file=sys.stderr)
    sys.exit(2)


def default_plan():
    built = os.path.join(ROOT, "build", "apps", "mini5d-plan")
    return built if os.path.exists(built) else (shutil.which("mini5d-plan") or built)


def node_list(text):
    try:
        nodes = sorted({int(x) for x in text.split(",")})
    except ValueError:
        fail(f"--nodes: '{text}' is not a comma-separated list of node counts")
    if not nodes or nodes[0] < 1:
        fail(f"--nodes: '{text}': node counts must be >= 1")
    return nodes


def write(a):
    modes = a.modes.split(",")
    for m in modes:
        if m not in ("weak", "strong"):
            fail(f"--modes: unknown mode '{m}' (valid: weak, strong)")
    os.makedirs(a.out, exist_ok=True)
    out = os.path.abspath(a.out)
    points = []
    for mode in modes:
        for n in node_list(a.nodes):
            name = f"{mode}-{n}n"
            batch = a.global_batch * n if mode == "weak" else a.global_batch
            base = [a.plan, "--model", os.path.abspath(a.model), "--cluster", os.path.abspath(a.cluster),
                    "--nodes", str(n), "--global-batch", str(batch)] + a.plan_arg
            deck, script = os.path.join(out, name + ".yaml"), os.path.join(out, name + ".sh")
            # One search: the best plan's deck and script, and its prediction as JSON.
            r = subprocess.run(base + ["--json", "--top", "1", "--emit-deck", deck, "--emit-slurm", script],
                               capture_output=True, text=True)
            if r.returncode != 0:
                fail(f"{name}: mini5d-plan failed: {(r.stderr or r.stdout).strip().splitlines()[-1:]}")
            best = json.loads(r.stdout)["plans"][0]
            lay = best["layout"]
            devices = lay["d"] * lay["t"] * lay["p"] * lay["c"]
            points.append({"name": name, "mode": mode, "nodes": n, "devices": devices, "global_batch": batch,
                           "deck": deck, "script": script, "layout": lay,
                           "predicted_tokens_per_s": best["tokens_per_s"], "predicted_step_s": best["time_s"]["step"]})
            print(f"{name}: {devices} devices, global batch {batch}, predicted {best['tokens_per_s']:.1f} tokens/s")
    with open(os.path.join(out, "study.json"), "w") as f:
        json.dump({"model": os.path.abspath(a.model), "cluster": os.path.abspath(a.cluster), "points": points}, f,
                  indent=1)
    print(f"wrote {len(points)} jobs to {out} (submit: {sys.argv[0]} submit {a.out})")


def load_study(d):
    path = os.path.join(d, "study.json")
    if not os.path.exists(path):
        fail(f"{path}: no study here (run `write` first)")
    with open(path) as f:
        return json.load(f)


def submit(a):
    study = load_study(a.dir)
    out = os.path.abspath(a.dir)
    jobs = {}
    for p in study["points"]:
        # Each point its own checkpoint directory: two jobs in one would refuse each other.
        cmd = ["sbatch", "--parsable", "--chdir", out, f"--export=ALL,CKPT_DIR=ckpt-{p['name']}"] + a.sbatch_arg + \
              [p["script"]] + ([f"train.steps={a.steps}"] if a.steps else []) + a.override
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0 or not r.stdout.strip().split(";")[0].isdigit():
            fail(f"{p['name']}: sbatch failed: {(r.stderr or r.stdout).strip()}")
        jobs[p["name"]] = r.stdout.strip().split(";")[0]
        print(f"{p['name']}: job {jobs[p['name']]}")
    with open(os.path.join(out, "jobs.json"), "w") as f:
        json.dump(jobs, f, indent=1)


def report_of(d, job):
    """The last start's report of a job (mini5d-report-<job>-<restart>.json), or None."""
    found = glob.glob(os.path.join(d, f"mini5d-report-{job}-*.json"))
    if not found:
        return None
    last = max(found, key=lambda p: int(p.rsplit("-", 1)[1].split(".")[0]))
    with open(last) as f:
        return json.load(f)


def rows_of(study, jobs, d):
    rows = []
    for p in study["points"]:
        rep = report_of(d, jobs[p["name"]]) if p["name"] in jobs else None
        fom = rep["fom"] if rep else None
        rows.append(dict(p, job=jobs.get(p["name"]), measured=fom["tokens_per_s"] if fom else None,
                         valid=bool(fom and fom["valid"])))
    for mode in {r["mode"] for r in rows}:
        mine = sorted((r for r in rows if r["mode"] == mode), key=lambda r: r["nodes"])
        base = mine[0]
        for r in mine:
            r["efficiency"] = None
            if r["measured"] is None or base["measured"] is None:
                continue
            if mode == "weak":  # the same work per device: per-device rate against the base's
                r["efficiency"] = (r["measured"] / r["devices"]) / (base["measured"] / base["devices"])
            else:  # the same problem: speed-up against the growth in nodes
                r["efficiency"] = (r["measured"] / base["measured"]) / (r["nodes"] / base["nodes"])
    for r in rows:
        r["per_device"] = r["measured"] / r["devices"] if r["measured"] is not None else None
        r["vs_predicted"] = r["measured"] / r["predicted_tokens_per_s"] if r["measured"] is not None else None
    return sorted(rows, key=lambda r: (r["mode"], r["nodes"]))


def cell(v, fmt):
    return "-" if v is None else fmt.format(v)


def svg(rows, path):
    """Tokens/s per device against nodes (log2 axis), measured (solid) and predicted (dashed)."""
    w, h, l, b = 560, 340, 70, 40
    nodes = sorted({r["nodes"] for r in rows})
    vals = [r["per_device"] for r in rows if r["per_device"]] + [r["predicted_tokens_per_s"] / r["devices"] for r in rows]
    top = max(vals) * 1.15 if vals else 1.0
    span = max(1, len(nodes) - 1)

    def xy(n, v):
        x = l + (w - l - 20) * (nodes.index(n) / span if len(nodes) > 1 else 0.5)
        return x, h - b - (h - b - 20) * (v / top)

    colours = {"weak": "#1f77b4", "strong": "#d62728"}
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="11">',
           f'<line x1="{l}" y1="{h - b}" x2="{w - 10}" y2="{h - b}" stroke="black"/>',
           f'<line x1="{l}" y1="{h - b}" x2="{l}" y2="10" stroke="black"/>',
           f'<text x="{(w + l) / 2}" y="{h - 8}" text-anchor="middle">nodes</text>',
           f'<text x="14" y="{h / 2}" transform="rotate(-90 14 {h / 2})" text-anchor="middle">tokens/s per device</text>']
    for n in nodes:
        x, _ = xy(n, 0)
        out.append(f'<text x="{x}" y="{h - b + 14}" text-anchor="middle">{n}</text>')
    for i in range(5):
        v = top * i / 4
        _, y = xy(nodes[0], v)
        out.append(f'<text x="{l - 4}" y="{y + 4}" text-anchor="end">{v:.3g}</text>')
    for k, mode in enumerate(sorted({r["mode"] for r in rows})):
        mine = [r for r in rows if r["mode"] == mode]
        pred = " ".join("%.1f,%.1f" % xy(r["nodes"], r["predicted_tokens_per_s"] / r["devices"]) for r in mine)
        out.append(f'<polyline points="{pred}" fill="none" stroke="{colours[mode]}" stroke-dasharray="5,4"/>')
        meas = [r for r in mine if r["per_device"] is not None]
        if meas:
            pts = " ".join("%.1f,%.1f" % xy(r["nodes"], r["per_device"]) for r in meas)
            out.append(f'<polyline points="{pts}" fill="none" stroke="{colours[mode]}" stroke-width="2"/>')
            for r in meas:
                x, y = xy(r["nodes"], r["per_device"])
                out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colours[mode]}"/>')
        out.append(f'<text x="{w - 150}" y="{24 + 14 * k}" fill="{colours[mode]}">{mode}: measured (solid), '
                   'predicted (dashed)</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def collect(a):
    study = load_study(a.dir)
    jobs_path = os.path.join(a.dir, "jobs.json")
    jobs = json.load(open(jobs_path)) if os.path.exists(jobs_path) else {}
    rows = rows_of(study, jobs, a.dir)
    cols = ["mode", "nodes", "devices", "global_batch", "job", "measured", "valid", "per_device", "efficiency",
            "predicted_tokens_per_s", "vs_predicted"]
    with open(os.path.join(a.dir, "scaling.csv"), "w", newline="") as f:
        wr = csv.writer(f)
        wr.writerow(cols)
        for r in rows:
            wr.writerow([r[c] for c in cols])
    lines = ["| mode | nodes | devices | global batch | job | tokens/s | valid | per device | efficiency | "
             "predicted tokens/s | measured/predicted |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['mode']} | {r['nodes']} | {r['devices']} | {r['global_batch']} | {r['job'] or '-'} | "
                     f"{cell(r['measured'], '{:.1f}')} | {'yes' if r['valid'] else 'no'} | "
                     f"{cell(r['per_device'], '{:.1f}')} | {cell(r['efficiency'], '{:.1%}')} | "
                     f"{r['predicted_tokens_per_s']:.1f} | {cell(r['vs_predicted'], '{:.2f}')} |")
    table = "\n".join(lines) + "\n"
    with open(os.path.join(a.dir, "scaling.md"), "w") as f:
        f.write(table)
    svg(rows, os.path.join(a.dir, "scaling.svg"))
    print(table, end="")
    bad = [r["name"] for r in rows if r["measured"] is None or not r["valid"]]
    if bad and not a.allow_missing:
        print(f"scaling_study: no valid report for {', '.join(bad)}", file=sys.stderr)
        sys.exit(1)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("write")
    w.add_argument("--model", required=True)
    w.add_argument("--cluster", required=True)
    w.add_argument("--nodes", required=True, help="comma-separated node counts, e.g. 1,2,4,8")
    w.add_argument("--modes", default="weak,strong")
    w.add_argument("--global-batch", type=int, default=16,
                   help="sequences per step: in all for strong scaling, per node for weak")
    w.add_argument("--out", required=True)
    w.add_argument("--plan", default=default_plan(), help="mini5d-plan (default: build/apps, else on PATH)")
    w.add_argument("--plan-arg", action="append", default=[], help="more mini5d-plan arguments (repeatable)")
    s = sub.add_parser("submit")
    s.add_argument("dir")
    s.add_argument("--steps", type=int, default=0, help="train.steps for every job (default: the deck's)")
    s.add_argument("--sbatch-arg", action="append", default=[], help="more sbatch arguments (repeatable)")
    s.add_argument("override", nargs="*", help="section.field=value overrides for mini5d")
    c = sub.add_parser("collect")
    c.add_argument("dir")
    c.add_argument("--allow-missing", action="store_true")
    # Deck overrides may come anywhere after `submit DIR` (argparse would take only the
    # ones before the first option as positionals).
    a, extra = ap.parse_known_args()
    if extra:
        bad = [x for x in extra if a.cmd != "submit" or "=" not in x or x.startswith("-")]
        if bad:
            ap.error(f"unrecognized arguments: {' '.join(bad)}")
        a.override += extra
    if a.cmd == "write" and a.global_batch < 1:
        fail(f"--global-batch: {a.global_batch} (valid: >= 1)")
    {"write": write, "submit": submit, "collect": collect}[a.cmd](a)


if __name__ == "__main__":
    main()
