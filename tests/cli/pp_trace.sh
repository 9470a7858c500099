#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# output.trace at p = 2 (1F1B, m = 4, 3 steps) is valid JSON as Perfetto loads it: one
# process per rank named by its grid coordinates, a compute and a communication track
# each, m forwards and m backwards per step on every rank, labelled by micro-batch.
# With matplotlib, perf/plot_pipeline.py draws its Gantt chart (a PNG).
# usage: pp_trace.sh WORKDIR MPIEXEC NP_FLAG APP DECK PLOT_SCRIPT
set -u
work=$1 mpiexec=$2 npflag=$3 app=$4 deck=$5 plot=$6
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
"$mpiexec" "$npflag" 2 "$app" train "$deck" parallel.p=2 train.steps=3 train.accumulation=4 train.micro_batch=4 \
  output.trace=trace.json output.report= >out.txt 2>&1 || { cat out.txt; exit 1; }
grep -q "^  stage 1 (rank 1): bubble " out.txt || { echo "FAIL: no pipeline summary"; cat out.txt; exit 1; }
python3 - trace.json <<'PY' || exit 1
import json, sys
t = json.load(open(sys.argv[1]))
ev = t["traceEvents"]
procs = {e["pid"]: e["args"]["name"] for e in ev if e.get("ph") == "M" and e["name"] == "process_name"}
assert procs == {0: "rank 0 (d0 p0 c0 e0 t0)", 1: "rank 1 (d0 p1 c0 e0 t0)"}, procs
threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev if e.get("ph") == "M" and e["name"] == "thread_name"}
assert sorted(set(threads.values())) == ["communication", "compute"], threads
for r in (0, 1):
    for cat, letter in (("forward", "F"), ("backward", "B")):
        xs = [e for e in ev if e.get("ph") == "X" and e["pid"] == r and e["cat"] == cat]
        assert len(xs) == 3 * 4, (r, cat, len(xs))
        assert all(e["tid"] == 0 and e["dur"] >= 0 and e["name"] == letter + str(e["args"]["micro_batch"]) for e in xs)
    waits = [e for e in ev if e.get("ph") == "X" and e["pid"] == r and e["cat"].startswith("wait")]
    assert len(waits) == 3 * 4 and all(e["tid"] == 1 for e in waits), len(waits)
print("ok: trace valid, 2 ranks, 12 forwards and 12 backwards each")
PY
for py in python3 /usr/bin/python3; do
  if "$py" -c "import matplotlib" 2>/dev/null; then
    "$py" "$plot" trace.json gantt.png >/dev/null || exit 1
    [[ -s gantt.png ]] || { echo "FAIL: no gantt.png"; exit 1; }
    echo "ok: gantt.png"
    break
  fi
done
