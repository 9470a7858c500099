// SPDX-License-Identifier: BSD-3-Clause
// The --goodput mode of mini5d-plan (goodput_cli.cpp): the goodput rule on figures given
// on the command line, one JSON object out, so that a measurement (the failure soak)
// predicts with the planner's own code:
//   mini5d-plan --goodput step_s=S,save_s=C,restart_s=R,node_mtbf_s=M,nodes=N[,write_s=W][,interval_steps=K]
// Without interval_steps the interval is Young's. A bad argument is one line, exit 1.
#pragma once

namespace mini5d::plan {

// argv as mini5d-plan got it (one of them --goodput); returns the exit status.
int goodput_main(int argc, char** argv);

}  // namespace mini5d::plan
