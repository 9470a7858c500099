// SPDX-License-Identifier: BSD-3-Clause
// A plan's goodput (docs/planner.md, "Goodput"): the rule of rules/goodput.hpp fed from
// the plan and the cluster file. The job's MTBF is reliability.node_mtbf_hours over the
// plan's nodes; a save writes the checkpoint at the file system's write rate and blocks
// (checkpoint_io, shared with the time-limit warning); a restart is the requeue, the
// start-up, the load at the read rate and one step; the interval is Young's, in steps.
// A cluster file without a node MTBF or a write rate has no goodput, and says so.
#pragma once
#include <string>

#include "mini5d/plan/output/signal_margin.hpp"
#include "mini5d/plan/search/search.hpp"
#include "mini5d/rules/goodput.hpp"

namespace mini5d::plan {

struct PlanGoodput {
  bool available = false;
  std::string why_not;  // when not available: the missing field and file
  CheckpointIo io;
  goodput::Inputs in;   // step, save, restart, node MTBF (s), nodes
  double requeue_s = 0, startup_s = 0;
  long long interval_steps = 0;
  double young_s = 0, ettr = 0;
};

PlanGoodput plan_goodput(const ModelDesc& m, const ClusterDesc& cl, const Plan& p);

// One paragraph for --explain: the ETTR, the interval and every input, or why none.
std::string goodput_text(const PlanGoodput& g);

// The JSON object ("goodput": ...) of a plan: the figures and their inputs, or
// {"available": false, "why": ...}.
std::string goodput_json(const PlanGoodput& g);

}  // namespace mini5d::plan
