// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/topology/startup.hpp"

#include <Kokkos_Macros.hpp>  // KOKKOS_ENABLE_CUDA / _HIP: whether a bad GPU list matters
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "mini5d/topology/binding.hpp"
#include "mini5d/topology/device_choice.hpp"
#include "mini5d/topology/membership.hpp"
#include "mini5d/topology/node.hpp"
#include "mini5d/topology/placement.hpp"
#include "mini5d/comm/agreement.hpp"

namespace mini5d::topology {

Placement place_this_rank(MPI_Comm comm, const Deck& deck) {
  const NodeTopology node = discover();
  const NodeMembership m = node_membership(comm, deck.parallel.ranks_per_node);
  const PlacementTable table = placement_table(deck.parallel, m.node_of_rank);
  // Same table on every rank, so every rank refuses together.
  check_placement(table, deck.parallel.force_placement);
  const BindReport rep = bind_this_rank(node, m);
  // The host name as this rank sees it: on a cluster it tells which machine each node is.
  std::string mine = "  rank " + std::to_string(m.rank) + " (node " + std::to_string(m.node) + ", " + node.hostname + "): " +
                     format_binding(node, rep.binding) + ", BLAS threads " + std::to_string(rep.blas_threads) +
                     (rep.bound ? "" : " (not bound)");
  Placement p;
  p.host_threads = rep.host_threads;
  // The GPU, by the one policy of device_choice.hpp: the launcher's one visible GPU when
  // it binds, else the GPU nearest the cores mini5d bound, numbered in PCI bus order.
  const DeviceChoice dev = choose_device(node, rep.binding.gpu, m.local_rank, rep.launcher_binds, read_gpu_env());
  // A visibility list the GPU runtime would misread (ROCR_VISIBLE_DEVICES=4 under a
  // leftover HIP_VISIBLE_DEVICES=4, an entry that is neither index nor UUID): a GPU build
  // refuses on every rank with that one line, before Kokkos starts on the wrong GPU or
  // none; a host-only build never opens a GPU, so it is only said.
#if defined(KOKKOS_ENABLE_CUDA) || defined(KOKKOS_ENABLE_HIP)
  comm::raise_if_any(comm, dev.error.empty() ? std::vector<std::string>{} : std::vector<std::string>{dev.error},
                     comm::ProblemKind::Input);
#endif
  // Before any GPU runtime starts, so it numbers the GPUs as the choice assumed.
  if (dev.set_pci_order) setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 0);
  p.device_id = dev.device_id;
  if (dev.device_id >= 0) mine += ", device id " + std::to_string(dev.device_id);
  if (!dev.note.empty()) mine += "\n    " + dev.note;
  if (!dev.error.empty()) mine += "\n    " + dev.error + " (not used: a host-only build)";
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
