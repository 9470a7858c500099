// SPDX-License-Identifier: BSD-3-Clause
// Node membership (membership.hpp). The MPI part is one split and one allgather at
// start-up; everything after works on the gathered node ids.
#include "mini5d/topology/membership.hpp"

#include <map>
#include <string>

#include "mini5d/core/error.hpp"

namespace mini5d::topology {

std::vector<int> virtual_node_ids(int ranks, int ranks_per_node) {
  if (ranks_per_node <= 0 || ranks % ranks_per_node != 0)
    throw InputError("parallel.ranks_per_node=" + std::to_string(ranks_per_node) +
                     ": must divide the number of ranks (" + std::to_string(ranks) + ")");
  std::vector<int> ids(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) ids[static_cast<std::size_t>(r)] = r / ranks_per_node;
  return ids;
}

NodeMembership membership_from_ids(const std::vector<int>& node_ids, int rank, bool virtual_nodes) {
  NodeMembership m;
  m.rank = rank;
  m.size = static_cast<int>(node_ids.size());
  m.virtual_nodes = virtual_nodes;
  // Renumber by first appearance so node 0 holds rank 0 whatever MPI's ids were.
  std::map<int, int> renum;
  for (int id : node_ids) renum.emplace(id, static_cast<int>(renum.size()));
  std::vector<int> seen(renum.size(), 0);
  m.node_of_rank.reserve(node_ids.size());
  for (int r = 0; r < m.size; ++r) {
    const int n = renum.at(node_ids[static_cast<std::size_t>(r)]);
    m.node_of_rank.push_back(n);
    if (r == rank) {
      m.node = n;
      m.local_rank = seen[static_cast<std::size_t>(n)];
    }
    ++seen[static_cast<std::size_t>(n)];
  }
  m.nodes = static_cast<int>(renum.size());
  m.local_size = seen.empty() ? 1 : seen[static_cast<std::size_t>(m.node)];
  m.host_local_rank = m.local_rank;
  m.host_local_size = m.local_size;
  return m;
}

NodeMembership node_membership(MPI_Comm comm, int ranks_per_node) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  // Validate before any collective, so a bad deck fails on every rank alike.
  std::vector<int> virtual_ids;
  if (ranks_per_node > 0) virtual_ids = virtual_node_ids(size, ranks_per_node);
  // A machine is named by the lowest rank on it, which all its ranks agree on.
  MPI_Comm shared;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &shared);
  int leader = rank, host_rank = 0, host_size = 1;
  MPI_Allreduce(MPI_IN_PLACE, &leader, 1, MPI_INT, MPI_MIN, shared);
  MPI_Comm_rank(shared, &host_rank);
  MPI_Comm_size(shared, &host_size);
  MPI_Comm_free(&shared);
  NodeMembership m;
  if (ranks_per_node > 0) {
    m = membership_from_ids(virtual_ids, rank, true);
  } else {
    std::vector<int> leaders(static_cast<std::size_t>(size));
    MPI_Allgather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, comm);
    m = membership_from_ids(leaders, rank, false);
  }
  m.host_local_rank = host_rank;
  m.host_local_size = host_size;
  return m;
}

}  // namespace mini5d::topology
