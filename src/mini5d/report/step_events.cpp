// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/report/step_events.hpp"

#include <algorithm>
#include <sstream>

#include "mini5d/core/json_text.hpp"
#include "mini5d/report/text_format.hpp"

namespace mini5d::report {

namespace {
void keep_most(prof::KokkosEvents& m, const prof::KokkosEvents& e) {
  m.for_each_count(e, [](double most, double now) { return std::max(most, now); });
}

std::string copies(std::int64_t n, double bytes) {
  return std::to_string(n) + (n ? " (" + fmt("%.0f", bytes) + " B)" : std::string());
}
}  // namespace

StepEvents step_events(const train::RunRecord& rec) {
  StepEvents e;
  if (!prof::counting_kokkos_events()) return e;
  const auto& h = rec.history;
  for (std::size_t i = 1; i < h.size(); ++i) {
    keep_most(e.most, h[i].events);
    e.mpi_calls = std::max(e.mpi_calls, h[i].mpi_calls);
    ++e.steps;
  }
  return e;
}

void print_step_events(std::ostream& os, const StepEvents& e) {
  if (e.steps == 0) return;
  const auto& m = e.most;
  os << "per step (rank 0, the most in any of steps 2.." << e.steps + 1 << "): " << m.launches
     << " kernel launches and " << m.blas_calls << " BLAS calls; ";
  if (prof::fences_reported())
    os << m.fences_global << " global and " << m.fences_instance << " instance fences; ";
  else
    os << "fences not reported by this Kokkos; ";
  os << "deep copies " << copies(m.copies_to_host, m.bytes_to_host) << " to host, "
     << copies(m.copies_to_device, m.bytes_to_device) << " to device, " << copies(m.copies_host, m.bytes_host)
     << " host to host, " << copies(m.copies_device, m.bytes_device) << " device to device; " << m.allocations
     << " allocations; " << e.mpi_calls << " MPI calls\n";
}

std::string step_events_json(const StepEvents& e) {
  if (e.steps == 0) return "null";
  const auto& m = e.most;
  std::ostringstream o;
  o << "{\"steps\": " << e.steps << ", \"statistic\": \"most in any of steps 2..n\", \"launches\": " << m.launches
    << ", \"fences_reported\": " << (prof::fences_reported() ? "true" : "false")
    << ", \"fences_global\": " << m.fences_global << ", \"fences_instance\": " << m.fences_instance
    << ", \"copies\": {\"to_host\": " << m.copies_to_host << ", \"to_device\": " << m.copies_to_device
    << ", \"host_to_host\": " << m.copies_host << ", \"device_to_device\": " << m.copies_device
    << "}, \"copy_bytes\": {\"to_host\": " << jnum(m.bytes_to_host) << ", \"to_device\": " << jnum(m.bytes_to_device)
    << ", \"host_to_host\": " << jnum(m.bytes_host) << ", \"device_to_device\": " << jnum(m.bytes_device)
    << "}, \"allocations\": " << m.allocations << ", \"allocated_bytes\": " << jnum(m.allocated_bytes)
    << ", \"regions\": " << m.regions << ", \"blas_calls\": " << m.blas_calls << ", \"mpi_calls\": " << e.mpi_calls
    << "}";
  return o.str();
}

}  // namespace mini5d::report
