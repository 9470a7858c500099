#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# perf/scaling_study.py collect on a made-up study: weak and strong points at 1, 2 and 4
# nodes with reports whose FOMs are chosen so every efficiency is known exactly; a
# requeued job (its second start's report is the one used); a point without a report
# (exit 1, or a '-' row with --allow-missing); an invalid FOM.
# usage: check_scaling_collect.py REPO_ROOT WORKDIR
import csv
import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

root, work = sys.argv[1], sys.argv[2]
study_py = os.path.join(root, "perf", "scaling_study.py")


def fail(msg):
    sys.exit("FAIL: " + msg)


shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
# nodes -> (devices, measured tokens/s, predicted tokens/s)
weak = {1: (2, 100.0, 110.0), 2: (4, 190.0, 215.0), 4: (8, 360.0, 420.0)}
strong = {1: (2, 100.0, 110.0), 2: (4, 180.0, 200.0), 4: (8, 300.0, 350.0)}
points, jobs, job = [], {}, 100
for mode, table in (("weak", weak), ("strong", strong)):
    for n, (dev, meas, pred) in table.items():
        name = f"{mode}-{n}n"
        points.append({"name": name, "mode": mode, "nodes": n, "devices": dev, "global_batch": 8 * n,
                       "deck": name + ".yaml", "script": name + ".sh", "layout": {"d": dev},
                       "predicted_tokens_per_s": pred, "predicted_step_s": 1.0})
        job += 1
        jobs[name] = str(job)
        if name == "strong-2n":  # requeued once: the first start's figure must not be used
            with open(os.path.join(work, f"mini5d-report-{job}-0.json"), "w") as f:
                json.dump({"fom": {"tokens_per_s": 1.0, "valid": True}}, f)
            out = f"mini5d-report-{job}-1.json"
        else:
            out = f"mini5d-report-{job}-0.json"
        with open(os.path.join(work, out), "w") as f:
            json.dump({"fom": {"tokens_per_s": meas, "valid": True}}, f)
with open(os.path.join(work, "study.json"), "w") as f:
    json.dump({"model": "m.yaml", "cluster": "c.yaml", "points": points}, f)
with open(os.path.join(work, "jobs.json"), "w") as f:
    json.dump(jobs, f)


def collect(*extra):
    return subprocess.run([sys.executable, study_py, "collect", work, *extra], capture_output=True, text=True)


r = collect()
if r.returncode != 0:
    fail(f"collect failed: {r.stdout}{r.stderr}")
rows = {(x["mode"], int(x["nodes"])): x for x in csv.DictReader(open(os.path.join(work, "scaling.csv")))}
expect = {("weak", 1): 1.0, ("weak", 2): 0.95, ("weak", 4): 0.9,      # 47.5 and 45 per device against 50
          ("strong", 1): 1.0, ("strong", 2): 0.9, ("strong", 4): 0.75}  # 1.8x on 2x, 3x on 4x
for k, eff in expect.items():
    got = float(rows[k]["efficiency"])
    if abs(got - eff) > 1e-12:
        fail(f"{k}: efficiency {got}, expected {eff}")
if abs(float(rows[("weak", 4)]["vs_predicted"]) - 360.0 / 420.0) > 1e-12:
    fail(f"weak 4 nodes: measured/predicted {rows[('weak', 4)]['vs_predicted']}, expected {360 / 420}")
if float(rows[("strong", 2)]["measured"]) != 180.0:
    fail("strong 2 nodes: not the requeued job's last report")
table = open(os.path.join(work, "scaling.md")).read()
if "| weak | 4 | 8 | 32 | 103 | 360.0 | yes | 45.0 | 90.0% | 420.0 | 0.86 |" not in table:
    fail("scaling.md lacks the weak 4-node row:\n" + table)
svg = ET.parse(os.path.join(work, "scaling.svg")).getroot()
if len(svg.findall("{http://www.w3.org/2000/svg}polyline")) != 4:
    fail("scaling.svg: expected a measured and a predicted line per mode")

# A point without a report: exit 1 naming it; with --allow-missing a '-' row.
os.remove(os.path.join(work, "mini5d-report-106-0.json"))  # strong-4n
r = collect()
if r.returncode != 1 or "no valid report for strong-4n" not in r.stderr:
    fail(f"a missing report was not reported: rc {r.returncode}: {r.stderr}")
r = collect("--allow-missing")
if r.returncode != 0 or "| strong | 4 | 8 | 32 | 106 | - | no | - | - | 350.0 | - |" not in r.stdout:
    fail(f"--allow-missing: rc {r.returncode}:\n{r.stdout}{r.stderr}")
# An invalid FOM counts as no result.
with open(os.path.join(work, "mini5d-report-106-0.json"), "w") as f:
    json.dump({"fom": {"tokens_per_s": 300.0, "valid": False}}, f)
r = collect()
if r.returncode != 1:
    fail("an invalid FOM was accepted")
print("ok: scaling_study collect: weak/strong efficiencies exact, requeued job's last report, "
      "missing and invalid reports refused, table and SVG written")
