// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/train/checkpoint_interval.hpp"

#include <cstdio>
#include <iostream>
#include <utility>

#include "mini5d/rules/goodput.hpp"
#include "mini5d/topology/membership.hpp"
#include "mini5d/train/trainer.hpp"

namespace mini5d::train {

namespace {

goodput::Inputs goodput_inputs(const IntervalFigures& f) {
  goodput::Inputs in;
  in.step_s = f.step_s;
  in.save_s = f.save_s;
  in.node_mtbf_s = f.node_mtbf_hours * 3600;
  in.nodes = f.nodes;
  return in;
}

std::string g3(double v) {
  char s[32];
  std::snprintf(s, sizeof s, "%.3g", v);
  return s;
}

// "4.87 TB": decimal units, as the assumed rate is stated.
std::string bytes_text(double b) {
  const char* units[] = {"B", "kB", "MB", "GB", "TB", "PB"};
  int u = 0;
  while (b >= 1000 && u < 5) b /= 1000, ++u;
  return g3(b) + " " + units[u];
}

}  // namespace

long auto_interval_steps(const IntervalFigures& f) {
  return long(goodput::young_interval_steps(goodput_inputs(f)));
}

std::string interval_line(const IntervalFigures& f, long steps) {
  const auto in = goodput_inputs(f);
  std::string line = "checkpoint.every auto: every " + std::to_string(steps) + " step" + (steps == 1 ? "" : "s") +
                     " (Young: sqrt(2 x C " + g3(f.save_s) + " s x M " + g3(in.job_mtbf_s() / 3600) + " h) = " +
                     g3(goodput::young_interval_s(in)) + " s at " + g3(f.step_s) + " s/step; M = " +
                     g3(f.node_mtbf_hours) + " h / " + std::to_string(f.nodes) + " node" + (f.nodes == 1 ? "" : "s") +
                     "; C ";
  if (f.save_measured)
    return line + "measured at the save after step " + std::to_string(f.measured_at) + ", " + bytes_text(f.save_bytes) + ")";
  return line + "estimated from " + bytes_text(f.save_bytes) + " at " + bytes_text(kAssumedSaveBytesPerSecond) + "/s)";
}

// What a save cost training: the whole save when it blocks; for an asynchronous save the
// snapshot and any wait for its write (the write itself overlaps the steps).
double blocking_save_seconds(const CheckpointEvent& e) {
  return e.async ? e.snapshot_seconds + e.wait_seconds : e.seconds;
}

CheckpointSchedule::CheckpointSchedule(const CheckpointConfig& ck, long first_step, long long nodes,
                                       double checkpoint_bytes, AgreeMax agree_max, Note note)
    : auto_(ck.every_auto),
      interval_(ck.every_auto ? 0 : ck.every),
      last_save_(first_step),
      agree_max_(std::move(agree_max)),
      note_(std::move(note)) {
  figures_.node_mtbf_hours = ck.node_mtbf_hours;
  figures_.nodes = nodes;
  figures_.save_bytes = checkpoint_bytes;
  figures_.save_s = checkpoint_bytes / kAssumedSaveBytesPerSecond;
}

bool CheckpointSchedule::due(long next_step, double step_seconds) {
  // A fixed interval counts from step 0, so a resumed run saves at the same steps.
  if (!auto_) return interval_ > 0 && next_step % interval_ == 0;
  if (++steps_seen_ == kTimedStep) {
    figures_.step_s = agree_max_(step_seconds);
    derive();
  }
  return interval_ > 0 && next_step - last_save_ >= interval_;
}

std::string CheckpointSchedule::reason() const {
  return std::string(auto_ ? "auto: " : "") + "every " + std::to_string(interval_) + " steps";
}

void CheckpointSchedule::saved(const CheckpointEvent& e) {
  last_save_ = e.step;
  if (!auto_ || figures_.save_measured) return;
  figures_.save_s = agree_max_(blocking_save_seconds(e));
  figures_.save_bytes = e.bytes;
  figures_.save_measured = true;
  figures_.measured_at = e.step;
  if (figures_.step_s > 0) derive();  // else at the timed step, with this C
}

void CheckpointSchedule::derive() {
  interval_ = auto_interval_steps(figures_);
  if (note_) note_(interval_line(figures_, interval_));
}

CheckpointSchedule Trainer::checkpoint_schedule() {
  const auto& ck = deck_.checkpoint;
  if (!ck.every_auto) return CheckpointSchedule(ck, next_step_, 1, 0, {}, {});
  const MPI_Comm comm = grid_->cart().get();
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  // The distinct hosts among the ranks (or ranks / parallel.ranks_per_node): any one
  // failing stops the job. The same count on every rank.
  const long long nodes = topology::node_membership(comm, settings_.ranks_per_node).nodes;
  // A checkpoint holds every parameter once as fp32 weights and AdamW's two fp32
  // moments (train/training_state.cpp), whatever the layout and precision.
  const double bytes = 12.0 * double(base_->layout().global_total());
  auto agree_max = [this](double v) {
    comms_->world().allreduce_host(&v, 1, comm::Communicator::Op::max);
    return v;
  };
  auto note = [rank](const std::string& line) {
    if (rank == 0) std::cout << line << std::endl;
  };
  return CheckpointSchedule(ck, next_step_, nodes, bytes, agree_max, note);
}

}  // namespace mini5d::train
