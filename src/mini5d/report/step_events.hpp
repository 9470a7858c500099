// SPDX-License-Identifier: BSD-3-Clause
// What each step asked of Kokkos and MPI, for the closing summary and the report's
// "step_events" record: kernel launches, fences, deep copies by direction, allocations
// and MPI calls (train::StepStats::events, kernels/kokkos_events.hpp). Steps 2..n, the
// largest count of any of them: the first step allocates the workspaces and is left
// out, and a step that does more than the others is the one a budget must hold.
#pragma once
#include <ostream>
#include <string>

#include "mini5d/kernels/kokkos_events.hpp"
#include "mini5d/train/run_record.hpp"

namespace mini5d::report {

struct StepEvents {
  long steps = 0;  // steps counted (0: counting was off, or only one step ran)
  prof::KokkosEvents most;  // the largest of each count over those steps
  long mpi_calls = 0;
};

StepEvents step_events(const train::RunRecord& rec);
void print_step_events(std::ostream& os, const StepEvents& e);
std::string step_events_json(const StepEvents& e);

}  // namespace mini5d::report
