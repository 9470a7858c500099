// SPDX-License-Identifier: BSD-3-Clause
// What a pipeline rank did in a step, as the executor recorded it: the start and end
// of every action (forward, backward) and of every wait for a boundary tensor, in
// seconds on MPI_Wtime's clock. The bubble, the trace and the Gantt chart come from it.
#pragma once
#include <vector>

namespace mini5d::pp {

struct Event {
  enum Kind { forward, backward, wait_forward, wait_backward, send_forward, send_backward } kind;
  int mb = 0, chunk = 0;
  double t0 = 0, t1 = 0;
  bool compute() const { return kind == forward || kind == backward; }
  bool comm() const { return !compute(); }
};
const char* to_string(Event::Kind k);

struct StepTimeline {
  long step = 0;
  double start = 0, end = 0;  // this rank's step: after the lining-up barrier, after the last action
  double span = 0;            // the slowest pipeline rank's end - start: the step's pipelined time
  std::vector<Event> events;
  double busy() const {
    double s = 0;
    for (const auto& e : events)
      if (e.compute()) s += e.t1 - e.t0;
    return s;
  }
  double waiting() const {
    double s = 0;
    for (const auto& e : events)
      if (e.kind == Event::wait_forward || e.kind == Event::wait_backward) s += e.t1 - e.t0;
    return s;
  }
  // The rank's idle share of the pipelined time.
  double bubble() const { return span > 0 ? 1.0 - busy() / span : 0.0; }
  int peak_in_flight() const {
    int now = 0, peak = 0;
    for (const auto& e : events) {
      if (e.kind == Event::forward && ++now > peak) peak = now;
      if (e.kind == Event::backward) --now;
    }
    return peak;
  }
};

}  // namespace mini5d::pp
