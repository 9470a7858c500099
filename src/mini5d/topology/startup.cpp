// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/topology/startup.hpp"

#include <cctype>
#include <sstream>

#include "mini5d/topology/binding.hpp"
#include "mini5d/topology/membership.hpp"
#include "mini5d/topology/node.hpp"
#include "mini5d/topology/placement.hpp"
#include "mini5d/comm/agreement.hpp"

namespace mini5d::topology {

namespace {
// The runtime's index of a GPU: the N of its "cudaN" / "rsmiN" / "nvmlN" OS device name,
// or -1 when the GPU runtime does not list it (e.g. hidden by CUDA_VISIBLE_DEVICES):
// then the choice is left to Kokkos and the launcher.
int runtime_index(const NodeTopology& node, int gpu) {
  const std::string& name = node.gpus[std::size_t(gpu)].name;
  for (const char* prefix : {"cuda", "rsmi", "nvml"}) {
    const auto at = name.find(prefix);
    if (at == std::string::npos) continue;
    std::size_t i = at + std::string(prefix).size(), j = i;
    while (j < name.size() && std::isdigit(static_cast<unsigned char>(name[j]))) ++j;
    if (j > i) return std::stoi(name.substr(i, j - i));
  }
  return -1;
}
}  // namespace

Placement place_this_rank(MPI_Comm comm, const Deck& deck) {
  const NodeTopology node = discover();
  const NodeMembership m = node_membership(comm, deck.parallel.ranks_per_node);
  const PlacementTable table = placement_table(deck.parallel, m.node_of_rank);
  // Same table on every rank, so every rank refuses together.
  check_placement(table, deck.parallel.force_placement == "true");
  const BindReport rep = bind_this_rank(node, m);
  // The host name as this rank sees it: on a cluster it tells which machine each node is.
  std::string mine = "  rank " + std::to_string(m.rank) + " (node " + std::to_string(m.node) + ", " + node.hostname + "): " +
                     format_binding(node, rep.binding) + ", BLAS threads " + std::to_string(rep.blas_threads) +
                     (rep.bound ? "" : " (not bound)");
  Placement p;
  p.host_threads = rep.host_threads;
  // Choose the GPU only when mini5d also chose the cores; a launcher that binds
  // (MINI5D_NO_BIND=1, e.g. srun --gpu-bind) picks the GPU too.
  if (rep.binding.gpu >= 0 && rep.bound) {
    p.device_id = runtime_index(node, rep.binding.gpu);
    if (p.device_id >= 0) mine += ", device id " + std::to_string(p.device_id);
  }
  for (const auto& n : rep.notes) mine += "\n    " + n;
  const auto all = comm::allgather_strings(comm, {mine});
  std::ostringstream out;
  if (m.rank == 0) {
    out << "placement: " << m.nodes << (m.virtual_nodes ? " virtual" : "") << " node(s); " << summary(node) << "\n"
        << table;
    for (const auto& line : all) out << line << "\n";
  }
  p.text = out.str();
  return p;
}

}  // namespace mini5d::topology
