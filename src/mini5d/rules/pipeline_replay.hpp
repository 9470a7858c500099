// SPDX-License-Identifier: BSD-3-Clause
// A pipeline step replayed on paper: every pipeline rank runs its schedule (pipeline_schedule.hpp)
// in order, each forward and backward taking the time its virtual stage costs, and a
// compute action starts once the rank is free and its input exists (the forward of the
// previous virtual stage, the backward of the next). Messages cost nothing here: what
// is left is the idle time uneven stages and the schedule's fill and drain cause.
//
// The formula (p-1)/(v m + p-1) is this replay's answer when every virtual stage costs
// the same; stages of different cost (an uneven split, the head on the last stage) make
// the ranks' idle shares differ, and the replay gives each rank its own.
#pragma once
#include <vector>

#include "mini5d/rules/pipeline_schedule.hpp"

namespace mini5d::pp {

struct Replay {
  double span = 0;            // from the first action's start to the last action's end
  std::vector<double> busy;   // per pipeline rank: the time it computes
  std::vector<double> end;    // per pipeline rank: when its last action ends
  // A rank's idle share of the span (as the executor measures it: timeline.hpp).
  double bubble(int stage) const { return span > 0 ? 1.0 - busy[std::size_t(stage)] / span : 0.0; }
};

// `forward[vs]` and `backward[vs]`: the seconds (or any unit) one micro-batch's forward
// and backward take on virtual stage vs (p*v entries). Throws std::invalid_argument if
// the spec cannot be scheduled or the costs have the wrong length.
Replay replay(const Spec& s, const std::vector<double>& forward, const std::vector<double>& backward);

// A lower bound on replay(s, forward, backward).span in O(p v): rank r computes its
// m micro-batches' chunks one after another, cannot start before micro-batch 0's
// forward has passed the virtual stages before its first (0..r-1), and must leave time
// for the last micro-batch's backward through them. A search ranks with it first and
// replays only what may matter (plan/cost/time_model.cpp).
double replay_lower_bound(const Spec& s, const std::vector<double>& forward, const std::vector<double>& backward);

// Each pipeline rank's idle share when virtual stage vs costs cost[vs] forward and twice
// that backward (a backward's two products per forward one).
std::vector<double> modelled_bubbles(const Spec& s, const std::vector<double>& cost);

}  // namespace mini5d::pp
