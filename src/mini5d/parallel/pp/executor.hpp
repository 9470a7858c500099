// SPDX-License-Identifier: BSD-3-Clause
// Runs one pipeline rank's schedule (rules/pipeline_schedule) for a step against a Stage. Every
// receive of the step is posted before the first action, into its own buffer, so a
// rank never waits on a peer that is itself waiting to post: no schedule can
// deadlock, whatever m is against p. Sends are non-blocking, from a copy the stage
// wrote, and complete in the background (tested between actions, waited for at the
// end of the step). A received activation stays in its buffer until the backward of
// its micro-batch on that chunk, because the chunk's first layer reads it again there.
#pragma once
#include <map>
#include <tuple>
#include <vector>

#include "mini5d/core/memory_ledger.hpp"
#include "mini5d/parallel/pp/pp_comm.hpp"
#include "mini5d/parallel/pp/stage.hpp"
#include "mini5d/parallel/pp/timeline.hpp"
#include "mini5d/rules/pipeline_schedule.hpp"

namespace mini5d::pp {

class Executor {
 public:
  // `boundary_bytes`: the size of one boundary tensor.
  Executor(const Spec& spec, PpComm& comm, std::int64_t boundary_bytes);
  const Spec& spec() const { return spec_; }
  const std::vector<Action>& actions() const { return actions_; }
  // Runs the step's actions; collective over the pipeline group. Returns what this rank
  // did, with `span` agreed over the group.
  StepTimeline run(Stage& stage, long step);

 private:
  VecU<Byte> take();          // a boundary buffer from the pool
  void give(VecU<Byte> buf);  // back to the pool
  void progress_sends(bool wait);
  // Waits for the sends that read stage memory backward(mb, chunk) may change: that
  // micro-batch's forward output and every earlier backward's dL/d(input).
  void settle_stage_sends(int mb, int chunk);

  Spec spec_;
  int rank_;
  PpComm& comm_;
  std::int64_t n_;
  std::vector<Action> actions_;
  std::vector<Vec<Byte>> pool_;
  std::vector<Byte*> free_;
  mem::Charge buffers_mem_;
  struct Send {
    comm::Request req;
    bool forward;    // an activation (else a gradient)
    int mb, chunk;   // whose
  };
  std::vector<Send> sends_;
};

}  // namespace mini5d::pp
