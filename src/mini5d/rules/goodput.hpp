// SPDX-License-Identifier: BSD-3-Clause
// Goodput under failures: the expected fraction of wall time that trains (ETTR) for a
// checkpoint interval, and the interval Young's rule picks. Pure, in rules/ so that the
// planner (--explain, --json, --goodput) and the trainer can compute it alike.
//
// The model (docs/planner.md, "Goodput"): failures of the job arrive as a Poisson
// process of rate 1/M, M = node MTBF / nodes (every node fails independently and
// exponentially; a failure of any node stops the job). A cycle is `tau` seconds of
// steps and a blocking save of C seconds. After a failure the job restarts, which costs
// R seconds (requeue, start-up, load, first step) and may itself be hit by a failure,
// then resumes from the last committed checkpoint. An asynchronous save blocks for C
// (the snapshot), then writes for W seconds in the background while the next cycle
// trains; the checkpoint counts only once committed, so a failure in those W seconds
// loses the cycle before too. A write longer than the compute it hides behind makes the
// next snapshot wait: that wait D = max(0, W - tau) is blocking too, in every cycle but
// the first after a restart (no write is in flight then).
//
// Under these assumptions the long-run fraction is exact:
//   ETTR = (tau / M) / ((exp((tau + C + D) / M) - 1) * exp((R + W - D) / M))
// Synchronous saves are W = D = 0. A renewal argument over cycles (docs/planner.md): a
// cycle of length s completes with probability exp(-s/M); every attempt, failed or not,
// costs (1 - exp(-s/M)) M exp(R/M) in expectation, failures during restart included;
// and a cycle that starts with a write in flight keeps the previous cycle's progress
// only if no failure comes in the write's W seconds, probability exp(-W/M).
#pragma once
#include <string>

namespace mini5d::goodput {

struct Inputs {
  double step_s = 0;       // one optimizer step, seconds (> 0)
  double save_s = 0;       // blocking part of a save (the whole save when synchronous), seconds
  double write_s = 0;      // asynchronous saves: the background write, seconds; 0: synchronous
  double restart_s = 0;    // requeue + start-up + load + first step, seconds
  double node_mtbf_s = 0;  // one node's mean time between failures, seconds (> 0)
  long long nodes = 1;     // nodes of the job (>= 1)
  double job_mtbf_s() const { return node_mtbf_s / double(nodes); }
};

// ETTR at a checkpoint every `interval_steps` steps (>= 1): in [0, 1].
double ettr(const Inputs& in, long long interval_steps);

// Young's first-order interval sqrt(2 C M), seconds (C the blocking save cost, M the
// job's MTBF). Daly's higher-order form moves it by under 1% where C/M < 1e-3, and the
// ETTR is flat around its optimum (the loss is second order in the interval's error).
double young_interval_s(const Inputs& in);

// Young's interval in whole steps, at least 1.
long long young_interval_steps(const Inputs& in);

// Why the inputs cannot be used, "" when they can: the field, its value and its range.
std::string invalid_field(const Inputs& in);

}  // namespace mini5d::goodput
