// SPDX-License-Identifier: BSD-3-Clause
// Which steps end with a checkpoint: every checkpoint.every steps, or, with
// checkpoint.every=auto, Young's interval sqrt(2 C M) (rules/goodput.hpp, the rule the
// planner uses) in whole steps. C is the blocking cost of one save, M the job's mean time
// between failures: checkpoint.node_mtbf_hours divided by the job's nodes.
//
// Nothing is measured at start-up, so the first interval comes after the second step
// (the first one warms caches and allocators): its time, and C estimated from the
// checkpoint's bytes at an assumed rate. Once the first save has been measured, the
// interval is derived again with that C. Every figure goes through the agreement the
// trainer gives (the largest over every rank) before it is rounded: ranks that chose
// different steps would wait for each other in the collective save for ever.
#pragma once
#include <functional>
#include <string>

#include "mini5d/core/deck.hpp"

namespace mini5d::train {

struct CheckpointEvent;

// The save rate assumed before any save is measured: 1 GB/s for the whole job, a
// modest parallel file system's.
constexpr double kAssumedSaveBytesPerSecond = 1e9;
// The step whose time sets the first interval (1-based, among this process's steps).
constexpr long kTimedStep = 2;

// The figures an automatic interval is derived from, the same on every rank.
struct IntervalFigures {
  double step_s = 0;            // one step, seconds (the slowest rank's)
  double save_s = 0;            // blocking cost of one save, seconds
  double save_bytes = 0;        // the checkpoint's bytes
  bool save_measured = false;   // save_s measured at a save; else save_bytes at the assumed rate
  long measured_at = 0;         // the step after which that save was measured
  double node_mtbf_hours = 0;   // one node's (> 0)
  long long nodes = 1;          // the job's (>= 1)
};

// Young's interval for these figures, in whole steps (>= 1).
long auto_interval_steps(const IntervalFigures& f);
// The line that says the interval and where it came from:
// "checkpoint.every auto: every 23 steps (Young: sqrt(2 x C 2.44 s x M 3.09 h) = 234 s
// at 10.2 s/step; M = 24.7 h / 8 nodes; C estimated from 4.87 TB at 1 GB/s)".
std::string interval_line(const IntervalFigures& f, long steps);

// The part of a save that stops training: the whole save when synchronous; for an
// asynchronous save its snapshot plus any wait for its write.
double blocking_save_seconds(const CheckpointEvent& e);

class CheckpointSchedule {
 public:
  using AgreeMax = std::function<double(double)>;  // collective: the largest value over every rank
  using Note = std::function<void(const std::string&)>;  // a line for the log (rank 0 prints)
  // `first_step`: the step the run starts from (0, or a resumed checkpoint's, which counts
  // as the last save). `nodes` and `checkpoint_bytes` serve only checkpoint.every=auto.
  CheckpointSchedule(const CheckpointConfig& ck, long first_step, long long nodes, double checkpoint_bytes,
                     AgreeMax agree_max, Note note);
  // After a step, with `next_step` steps done and this rank's `step_seconds`: whether to
  // save now. Collective with auto (every rank calls it after every step).
  bool due(long next_step, double step_seconds);
  // Why due() said yes, for the checkpoint's line ("auto: every 23 steps").
  std::string reason() const;
  // After every save. Collective with auto: the first re-derives the interval.
  void saved(const CheckpointEvent& e);
  long interval() const { return interval_; }  // steps; 0: no saves by count (yet)
  const IntervalFigures& figures() const { return figures_; }

 private:
  void derive();
  bool auto_ = false;
  long interval_ = 0, last_save_ = 0, steps_seen_ = 0;
  IntervalFigures figures_;
  AgreeMax agree_max_;
  Note note_;
};

}  // namespace mini5d::train
