#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""A training job under Slurm on the two-tier test cluster while its hosts are killed at random.

The job is the planner's sbatch script (plan.sh in the work directory, made by the
caller), one rank per host. Failures arrive as a Poisson process from the first step on:
the time to the next kill is drawn from an exponential distribution whose mean is the
job's MTBF (the host MTBF over the hosts), on the wall clock, so a failure can hit a
restart too, as the goodput model assumes (while the job is down it takes a host that
is still up). A kill is a SIGKILL to every process of one host, slurmd included, as
when a node loses power. The hosts are started again (their slurmd) once the job has
left the running state (Slurm requeued it after a node failure, or it FAILED where the
surviving rank ended it first: MPI's lost connection, or the deck's collective
watchdog), as spare nodes would take their place, and the soak submits the script
again (a requeued job is cancelled first: see below). The script resumes from `latest`.

Measured, from the job's log as it grows (the log has no clock; lines are stamped when
this script reads them, every 0.1 s):
- wall: from the first step of the first start to the last step of the last start;
- useful: steps x the median step time of the job's own steps;
- ETTR = useful / wall;
- per failure the restart: from the kill to the first step of the next start (restarts
  that a failure hit are left out of the restart cost: the model charges them again);
- the saves' blocking cost (the log's "checkpoint saved" lines, or their snapshot part
  for asynchronous saves) and background write time;
- kills, saves, restarts, steps run twice.
The prediction comes from the planner's goodput model (mini5d-plan --goodput) fed with
these measured costs, at the set failure rate and at the rate that happened (kills over
the wall time). Every step's loss must equal the uninterrupted run's within TOL.
Prints a summary and writes it as JSON (--out).
"""
import argparse
import atexit
import json
import os
import random
import re
import statistics
import subprocess
import sys
import time

STEP = re.compile(r"^step (\d+)/(\d+)\s+loss ([-+0-9.eEnaif]+).*?\s([0-9.]+) ms\s")
SAVED = re.compile(r"^checkpoint saved: .* at step (\d+) \(([^)]*)\), ([0-9.]+) MB in ([0-9.]+) s")
# An asynchronous save's second line: its blocking part, its background write, a wait for it.
ASYNC = re.compile(r"^checkpoint \S+: snapshot ([0-9.]+) s \(blocking\), written in ([0-9.]+) s")
WAITED = re.compile(r"waited ([0-9.]+) s")
VERSION = re.compile(r"^mini5d \d+\.\d+")
ENDED = ("FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "BOOT_FAIL", "NODE_FAIL", "DEADLINE")
AUTO = re.compile(r"^checkpoint.every auto: every (\d+) step")


def sh(*cmd, check=True):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if check and r.returncode != 0:
        sys.exit(f"FAIL: {' '.join(cmd)}: {r.stderr.strip() or r.stdout.strip()}")
    return r.stdout.strip()


def job_field(job, name):
    out = sh("scontrol", "-o", "show", "job", str(job), check=False)
    m = re.search(rf"\b{name}=(\S*)", out)
    return m.group(1) if m else ""


def node_state(host):
    return sh("sinfo", "-h", "-n", host, "-o", "%T", check=False)


def revive(cluster_root, dead):
    """Starts the killed hosts' slurmd again and waits until Slurm has them idle."""
    # Every process of a dead host was killed, its slurmd too, whatever Slurm shows yet
    # (it notices a silent node only after SlurmdTimeout).
    for host in sorted(dead):
        subprocess.run([os.path.join(cluster_root, "scripts", "cluster-enter.sh"), host, "slurmd", "-f",
                        os.environ["SLURM_CONF"], "-N", host], capture_output=True)
        for _ in range(240):
            if node_state(host) == "idle":
                break
            time.sleep(0.25)
    dead.clear()


class Log:
    """The job's output file, read as it grows; each line stamped with the time it was read."""

    def __init__(self, path):
        self.path, self.pos, self.rest = path, 0, ""

    def new_lines(self):
        try:
            with open(self.path) as f:
                f.seek(self.pos)
                text = f.read()
                self.pos = f.tell()
        except FileNotFoundError:
            return []
        text = self.rest + text
        lines = text.split("\n")
        self.rest = lines.pop()
        now = time.monotonic()
        return [(now, line) for line in lines]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--script", default="plan.sh")
    ap.add_argument("--hosts", nargs="+", required=True)
    ap.add_argument("--cluster-root", required=True, help="the mini5d source tree (scripts/cluster-enter.sh)")
    ap.add_argument("--planner", required=True, help="mini5d-plan, for the prediction")
    ap.add_argument("--reference", required=True, help="the uninterrupted run's report")
    ap.add_argument("--host-mtbf-s", type=float, required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-kills", type=int, default=1000)
    ap.add_argument("--deadline-s", type=float, default=900)
    ap.add_argument("--tol", type=float, default=1e-5)
    ap.add_argument("--out", default="soak.json")
    ap.add_argument("overrides", nargs="*", help="section.field=value for the deck")
    a = ap.parse_args()

    ref = json.load(open(a.reference))
    ref_loss = {s["step"]: s["loss"] for s in ref["steps"]}
    steps_total = max(ref_loss)
    rng = random.Random(a.seed)
    job_mtbf = a.host_mtbf_s / len(a.hosts)
    sbatch = ["sbatch", "--parsable", "-N", str(len(a.hosts)), "--ntasks-per-node=1", "-o", "job.out",
              a.script] + a.overrides
    log = Log("job.out")
    jobs = [sh(*sbatch)]
    kills, restarts, saves, lines_seen, step_ms = [], [], [], [], []
    auto_interval = 0
    next_kill = rng.expovariate(1 / job_mtbf)  # seconds after the first step
    first_step_t = last_step_t = None
    dead = set()
    atexit.register(revive, a.cluster_root, dead)  # pass or fail, the cluster is whole afterwards
    # phase: "training"; "ending" (a host was killed: waiting for Slurm to end or requeue
    # the job); "starting" (released or submitted again: waiting for its first step)
    phase, header_seen = "training", False
    t_start = time.monotonic()
    while True:
        now = time.monotonic()
        if now - t_start > a.deadline_s:
            sys.exit(f"FAIL: the soak did not finish in {a.deadline_s:.0f} s ({len(kills)} kills, phase {phase})")
        for t, line in log.new_lines():
            if m := STEP.match(line):
                lines_seen.append((t, int(m.group(1)), float(m.group(3))))
                step_ms.append(float(m.group(4)))
                first_step_t = first_step_t or t
                last_step_t = t
                if phase == "starting" and header_seen:
                    restarts[-1]["first_step_s"] = t - restarts[-1]["killed_at"]
                    phase = "training"
            elif VERSION.match(line) and phase == "starting":
                header_seen = True  # the new start's first line: step lines from here on are its own
            elif m := SAVED.match(line):
                saves.append({"step": int(m.group(1)), "reason": m.group(2), "mb": float(m.group(3)),
                              "blocking_s": float(m.group(4)), "write_s": 0.0})
            elif (m := ASYNC.match(line)) and saves:
                w = WAITED.search(line)
                saves[-1].update(blocking_s=float(m.group(1)) + (float(w.group(1)) if w else 0.0),
                                 write_s=float(m.group(2)))
            elif m := AUTO.match(line):
                auto_interval = int(m.group(1))  # the last one derived: after the first measured save
        state = job_field(jobs[-1], "JobState")
        if state == "COMPLETED" and phase == "training":
            break
        if state in ENDED and phase == "training":
            sys.exit(f"FAIL: job {jobs[-1]} ended {state} with no kill")
        if state in ENDED and phase == "starting" and not header_seen:
            # The start itself failed (srun could not reach a slurmd just started again):
            # part of this restart's cost; submit once more.
            restarts[-1]["launch_failures"] = restarts[-1].get("launch_failures", 0) + 1
            if restarts[-1]["launch_failures"] > 3:
                sys.exit(f"FAIL: job {jobs[-1]} ended {state} at its start, 4 times in a row")
            time.sleep(1)
            jobs.append(sh(*sbatch))
            continue
        if state in ENDED and phase == "starting":
            sys.exit(f"FAIL: job {jobs[-1]} ended {state} with no kill")
        # Failures come at any time after the first step, restarts included, as the model
        # has them; a failure while the job is down takes a host that is still up.
        alive = [h for h in a.hosts if h not in dead]
        if first_step_t is not None and now - first_step_t >= next_kill and len(kills) < a.max_kills and alive:
            host = rng.choice(alive if phase == "ending" else a.hosts)
            pids = sh("ip", "netns", "pids", host, check=False).split()
            for p in pids:
                subprocess.run(["kill", "-KILL", p], capture_output=True)
            dead.add(host)
            step = lines_seen[-1][1] if lines_seen else 0
            kills.append({"host": host, "at_s": now - first_step_t, "phase": phase, "last_step": step,
                          "pids": len(pids)})
            print(f"kill {len(kills)}: {host} ({len(pids)} processes) at step {step}, {now - first_step_t:.1f} s "
                  f"after the first step, {phase}", flush=True)
            if phase == "training":
                restarts.append({"job": jobs[-1], "killed_at": now})
            else:  # the restart itself was hit: its time is not a restart's cost
                restarts[-1]["interrupted"] = True
            phase = "ending"
            next_kill += rng.expovariate(1 / job_mtbf)
        elif phase == "ending" and state == "NODE_FAIL" and now - restarts[-1].setdefault("node_fail_at", now) < 3:
            pass  # with --requeue, NODE_FAIL passes on to PENDING: give it 3 s to
        elif phase == "ending" and (state in ENDED or state == "PENDING"):
            # Slurm has ended or requeued the job: the hosts come back, the job starts again.
            restarts[-1].setdefault("ended_s", now - restarts[-1]["killed_at"])
            revive(a.cluster_root, dead)
            if state == "PENDING":
                # Requeued by Slurm (node failure). Cancelled and submitted again rather
                # than released: a requeued job keeps its id, and the first start's
                # termination, sent when the lost node answers again, can kill the
                # second start on it.
                sh("scancel", str(jobs[-1]), check=False)
                for _ in range(100):
                    if job_field(jobs[-1], "JobState") not in ("PENDING", "RUNNING", "COMPLETING"):
                        break
                    time.sleep(0.1)
            restarts[-1]["how"] = f"job {state}, submitted again"
            jobs.append(sh(*sbatch))
            phase, header_seen = "starting", False
        time.sleep(0.1)
    for t, line in log.new_lines():
        if m := STEP.match(line):
            lines_seen.append((t, int(m.group(1)), float(m.group(3))))
            step_ms.append(float(m.group(4)))
            last_step_t = t
    worst = 0.0
    for _, step, loss in lines_seen:
        r = ref_loss.get(step)
        rel = abs(loss - r) / max(abs(r), 1e-30) if r is not None else float("nan")
        if not rel <= a.tol:  # a NaN fails too
            sys.exit(f"FAIL: step {step}: loss {loss!r} vs the uninterrupted run's {r!r} (relative {rel:.3g})")
        worst = max(worst, rel)
    last_steps = sorted({s for _, s, _ in lines_seen})
    if last_steps != list(range(1, steps_total + 1)):
        sys.exit(f"FAIL: steps logged do not cover 1..{steps_total}")
    # The step time here, under Slurm, with its saves and restarts: the median leaves the
    # steps that waited for a save out (their wait is a cost the model counts).
    step_s = statistics.median(step_ms) * 1e-3
    wall = last_step_t - first_step_t
    useful = steps_total * step_s
    meas = useful / wall
    periodic = [s for s in saves if s["reason"].startswith(("every", "auto"))]
    blocking = [s["blocking_s"] for s in periodic]
    writes = [s["write_s"] for s in periodic]
    # A restart's cost: from the kill to the next start's first step, over the restarts no
    # failure hit (the model charges a hit restart again from the hit).
    restart_s = [r["first_step_s"] for r in restarts if "first_step_s" in r and not r.get("interrupted")]
    for r in restarts:
        r.pop("killed_at")
        r.pop("node_fail_at", None)
    every = [o.split("=", 1)[1] for o in a.overrides if o.startswith("checkpoint.every=")]
    interval = auto_interval if every and every[-1] == "auto" else int(every[-1]) if every else 0
    if interval <= 0:
        sys.exit(f"FAIL: no checkpoint interval (checkpoint.every={every[-1] if every else 'unset'})")
    if not blocking or not restart_s:
        sys.exit(f"FAIL: no save ({len(blocking)}) or no restart measured ({len(restart_s)}): nothing to predict from")
    costs = {"step_s": step_s, "save_s": statistics.median(blocking), "write_s": statistics.median(writes),
             "restart_s": statistics.median(restart_s), "nodes": len(a.hosts), "interval_steps": interval}

    def predict(node_mtbf_s):
        arg = ",".join(f"{k}={v:.6g}" for k, v in dict(costs, node_mtbf_s=node_mtbf_s).items())
        return json.loads(sh(a.planner, "--goodput", arg))

    realised_host_mtbf = wall * len(a.hosts) / max(len(kills), 1)
    pred_set, pred_real = predict(a.host_mtbf_s), predict(realised_host_mtbf)
    summary = {
        "kills": len(kills), "restarts": len(restarts), "restarts_hit": len(restarts) - len(restart_s),
        "saves": len(saves), "jobs": jobs,
        "steps": steps_total, "steps_run": len(lines_seen), "steps_lost": len(lines_seen) - steps_total,
        "wall_s": wall, "useful_s": useful, "ettr_measured": meas,
        "host_mtbf_s": a.host_mtbf_s, "host_mtbf_realised_s": realised_host_mtbf,
        "ettr_predicted": pred_set["ettr"], "ettr_predicted_realised_rate": pred_real["ettr"],
        "costs": costs, "kill_log": kills, "restart_parts": restarts, "worst_loss_relative": worst,
    }
    with open(a.out, "w") as f:
        json.dump(summary, f, indent=1)
    print(f"{len(kills)} kills, {len(restarts)} restarts, {len(saves)} saves, {len(lines_seen) - steps_total} "
          f"steps run twice; wall {wall:.1f} s, useful {useful:.1f} s: ETTR {meas:.3f} measured, "
          f"{pred_real['ettr']:.3f} predicted at the rate that happened (host MTBF {realised_host_mtbf:.0f} s), "
          f"{pred_set['ettr']:.3f} at the set rate ({a.host_mtbf_s:.0f} s); losses within {worst:.2g} relative")


if __name__ == "__main__":
    main()
