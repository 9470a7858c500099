// SPDX-License-Identifier: BSD-3-Clause
// Trainer::summarise_pipeline: every rank's measured bubble, micro-batches in flight
// and activation memory beside the formula and the planner, gathered at the end of a
// run; and the output.trace file: a Chrome trace-event JSON (Perfetto,
// chrome://tracing) with one process per rank, named by its grid coordinates, and two
// tracks, compute (forward and backward of each micro-batch and chunk) and
// communication (waits for boundary tensors, sends posted).
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "mini5d/core/error.hpp"
#include "mini5d/core/regular_file.hpp"
#include "mini5d/plan/cost/memory_model.hpp"
#include "mini5d/rules/pipeline_replay.hpp"
#include "mini5d/rules/stage_split.hpp"
#include "mini5d/train/trainer.hpp"

namespace mini5d::train {

namespace {
constexpr int kFields = 6;  // per event: kind, micro-batch, chunk, step, t0, t1

std::string coords_name(const std::array<int, 5>& c) {
  return "d" + std::to_string(c[0]) + " p" + std::to_string(c[1]) + " c" + std::to_string(c[2]) + " e" +
         std::to_string(c[3]) + " t" + std::to_string(c[4]);
}

// Rank 0 writes every rank's events (flat, kFields each) as trace-event JSON, times in
// microseconds from the earliest event.
void write_trace_json(const std::string& path, const std::vector<std::array<int, 5>>& coords,
                      const std::vector<std::vector<double>>& events, int v) {
  // Rendered first, then written in place by the one writer (core/regular_file.hpp),
  // which refuses a FIFO or device that replaced the file during the run.
  std::ostringstream os;
  double origin = 1e300;
  for (const auto& r : events)
    for (std::size_t i = 0; i + kFields <= r.size(); i += kFields) origin = std::min(origin, r[i + 4]);
  os << "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
  bool first = true;
  auto sep = [&]() -> std::ostream& {
    os << (first ? "  " : ",\n  ");
    first = false;
    return os;
  };
  for (std::size_t r = 0; r < events.size(); ++r) {
    sep() << "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": " << r << ", \"args\": {\"name\": \"rank " << r
          << " (" << coords_name(coords[r]) << ")\"}}";
    sep() << "{\"ph\": \"M\", \"name\": \"process_sort_index\", \"pid\": " << r << ", \"args\": {\"sort_index\": " << r
          << "}}";
    sep() << "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": " << r << ", \"tid\": 0, \"args\": {\"name\": \"compute\"}}";
    sep() << "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": " << r
          << ", \"tid\": 1, \"args\": {\"name\": \"communication\"}}";
    const auto& e = events[r];
    for (std::size_t i = 0; i + kFields <= e.size(); i += kFields) {
      const auto kind = pp::Event::Kind(int(e[i]));
      const int mb = int(e[i + 1]), chunk = int(e[i + 2]);
      const bool compute = kind == pp::Event::forward || kind == pp::Event::backward;
      std::string name = kind == pp::Event::forward ? "F" : kind == pp::Event::backward ? "B" : pp::to_string(kind);
      name += (compute ? "" : " ") + std::to_string(mb) + (v > 1 ? " c" + std::to_string(chunk) : "");
      char times[96];
      std::snprintf(times, sizeof times, "\"ts\": %.3f, \"dur\": %.3f", (e[i + 4] - origin) * 1e6,
                    (e[i + 5] - e[i + 4]) * 1e6);
      sep() << "{\"ph\": \"X\", \"name\": \"" << name << "\", \"cat\": \"" << pp::to_string(kind) << "\", \"pid\": " << r
            << ", \"tid\": " << (compute ? 0 : 1) << ", " << times << ", \"args\": {\"step\": " << long(e[i + 3])
            << ", \"micro_batch\": " << mb << ", \"chunk\": " << chunk << "}}";
    }
  }
  os << "\n]}\n";
  if (const std::string why = write_regular_file(path, os.str()); !why.empty())
    throw InputError(path + ": output.trace: cannot write (" + why + ")");
}
}  // namespace

void Trainer::summarise_pipeline() {
  const auto& b = pipeline_->bubbles();
  const pp::Spec& sp = pipeline_->spec();
  // Mean over the steps after the first (the first pays for page faults and set-up).
  double bubble = 0, n = 0, in_flight = 0;
  for (std::size_t i = b.size() > 1 ? 1 : 0; i < b.size(); ++i) bubble += b[i].bubble, n += 1;
  for (const auto& x : b) in_flight = std::max(in_flight, double(x.peak_in_flight) / sp.v);
  const auto coords = grid_->coords();
  const auto act = measured_activation_memory().activations, pred = predicted_activation_memory().activations;
  const Schedule sch = sp.kind;
  const int stage = grid_->coord(grid::Axis::p);
  const auto costs = virtual_stage_costs(pipeline_split_shape(deck_), pipeline_split(deck_.model, layout_));
  const double predicted = pp::modelled_bubbles(sp, costs)[std::size_t(stage)];
  const double mine[] = {n > 0 ? bubble / n : 0.0, pp::formula_bubble(sp), in_flight,
                         plan::in_flight_microbatches(sch, sp.p, sp.m, sp.v, stage), act, pred,
                         double(coords[0]), double(coords[1]), double(coords[2]), double(coords[3]), double(coords[4]),
                         predicted};
  constexpr int k = int(sizeof mine / sizeof mine[0]);
  std::vector<double> all(std::size_t(k) * std::size_t(grid_->size()));
  comms_->world().allgather_host(mine, k, all.data());
  record_.pipeline_ranks.clear();
  for (int r = 0; r < grid_->size(); ++r) {
    const double* x = &all[std::size_t(r) * k];
    PipelineRankSummary s;
    s.rank = r;
    for (int c = 0; c < 5; ++c) s.coords[std::size_t(c)] = int(x[6 + c]);
    s.bubble = x[0], s.formula = x[1], s.in_flight = x[2], s.predicted_in_flight = x[3], s.predicted = x[11];
    s.activations = x[4], s.predicted_activations = x[5];
    record_.pipeline_ranks.push_back(s);
  }
  if (deck_.output.trace.empty()) return;
  // Every rank's recorded events to rank 0 of the grid, which writes the file.
  std::vector<double> ev;
  for (const auto& tl : pipeline_->timelines())
    for (const auto& e : tl.events)
      ev.insert(ev.end(), {double(int(e.kind)), double(e.mb), double(e.chunk), double(tl.step), e.t0, e.t1});
  const MPI_Comm comm = grid_->cart().get();
  int count = int(ev.size()), rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  std::vector<int> counts(static_cast<std::size_t>(size)), displs(static_cast<std::size_t>(size), 0);
  MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, comm);
  for (int r = 1; r < size; ++r) displs[std::size_t(r)] = displs[std::size_t(r - 1)] + counts[std::size_t(r - 1)];
  std::vector<double> gathered(rank == 0 ? std::size_t(displs.back() + counts.back()) : 0);
  MPI_Gatherv(ev.data(), count, MPI_DOUBLE, gathered.data(), counts.data(), displs.data(), MPI_DOUBLE, 0, comm);
  std::string problem;
  if (rank == 0) {
    std::vector<std::vector<double>> per(static_cast<std::size_t>(size));
    std::vector<std::array<int, 5>> co;
    for (int r = 0; r < size; ++r) {
      per[std::size_t(r)].assign(gathered.begin() + displs[std::size_t(r)],
                                 gathered.begin() + displs[std::size_t(r)] + counts[std::size_t(r)]);
      co.push_back(record_.pipeline_ranks[std::size_t(r)].coords);
    }
    try {
      write_trace_json(deck_.output.trace, co, per, sp.v);
    } catch (const std::exception& e) {
      problem = e.what();
    }
  }
  // The same outcome on every rank.
  int len = int(problem.size());
  MPI_Bcast(&len, 1, MPI_INT, 0, comm);
  problem.resize(std::size_t(len));
  MPI_Bcast(problem.data(), len, MPI_CHAR, 0, comm);
  if (!problem.empty()) throw InputError(problem);
}

}  // namespace mini5d::train
