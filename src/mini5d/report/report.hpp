// SPDX-License-Identifier: BSD-3-Clause
// Rank 0's outputs: the start-up header, one progress line per log interval, the
// closing phase breakdown with the frozen figure-of-merit line, and the versioned JSON
// record. The FOM line's format is a contract with scripts that grep it:
//   FOM mini5d tokens_per_s=<median> model_flops_per_s=<median> valid=1
// valid=1 (fom_valid) means the run trained: at least one step, every step's loss and
// gradient norm finite, no step skipped, no stop for diverging, and the final loss
// below the first step's loss.
#pragma once
#include <ostream>
#include <string>

#include "mini5d/measure/platform.hpp"
#include "mini5d/train/run_record.hpp"

namespace mini5d::report {

// The report reads the run's record (train/run_record.hpp); the trainer knows nothing of
// the report.
using measure::Platform;
using train::CheckpointEvent;
using train::PhaseTimes;
using train::RunRecord;
using train::StepStats;

constexpr int kReportSchemaVersion = 1;

// The parts of a restart this process can see, each the slowest rank's (resumed false
// on a fresh run): start-up from the process's start until the trainer is built, the
// checkpoint's load (read and verify), and the first step after it. The requeue before
// the process started is the batch system's (tests/slurm measure it).
struct RestartTimes {
  bool resumed = false;
  double startup_s = 0, load_s = 0, load_bytes = 0, first_step_s = 0;
};

void print_header(std::ostream& os, const Platform& pf, const RunRecord& rec);
void print_step(std::ostream& os, const StepStats& st, long total_steps);
void print_checkpoint(std::ostream& os, const CheckpointEvent& e);
// "restart: start-up X s, load Y s (Z GB at W GB/s), first step V s"
void print_restart(std::ostream& os, const RestartTimes& r);
void print_summary(std::ostream& os, const RunRecord& rec);
// Median over steps, leaving out the first (warm-up: page faults, BLAS set-up) when
// there is more than one.
double median_tokens_per_s(const RunRecord& rec);
// The FOM's validity (above), from the run's history.
bool fom_valid(const RunRecord& rec);
std::string report_json(const Platform& pf, const RunRecord& rec, const RestartTimes& restart = {});
// Writes report_json to path atomically (a temporary file renamed into place); throws
// std::runtime_error naming the path and the OS error when it cannot (the previous
// file, if any, is left as it was).
void write_report(const std::string& path, const Platform& pf, const RunRecord& rec, const RestartTimes& restart = {});

}  // namespace mini5d::report
