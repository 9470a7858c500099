// SPDX-License-Identifier: BSD-3-Clause
// Which ranks share a node. On a cluster MPI knows (MPI_COMM_TYPE_SHARED); for tests on
// one machine the deck's parallel.ranks_per_node cuts the ranks into "virtual nodes" of
// consecutive ranks, so placement checks and bindings can be exercised without a cluster.
#pragma once
#include <mpi.h>

#include <vector>

namespace mini5d::topology {

struct NodeMembership {
  int rank = 0, size = 1;              // in the communicator given
  int node = 0, nodes = 1;             // this rank's node id (0-based) and the node count
  int local_rank = 0, local_size = 1;  // among the ranks of this node, ordered by rank
  bool virtual_nodes = false;          // true: from ranks_per_node, not from MPI
  // Among the ranks on this physical machine (MPI_COMM_TYPE_SHARED). Equal to the local
  // fields except with virtual nodes, where several virtual nodes share one machine and
  // binding must share out its real cores among all of them.
  int host_local_rank = 0, host_local_size = 1;
  std::vector<int> node_of_rank;       // node id of every rank of the communicator
};

// Node ids of `ranks` ranks cut into virtual nodes of `ranks_per_node` consecutive ranks
// (node = rank / ranks_per_node). Throws InputError naming parallel.ranks_per_node when
// it does not divide `ranks` or is not positive. Pure: no MPI.
std::vector<int> virtual_node_ids(int ranks, int ranks_per_node);

// Membership from node ids (any numbering): nodes renumbered 0.. in order of their
// lowest rank, local ranks ordered by rank; host_local_* = local_*. Pure: no MPI.
NodeMembership membership_from_ids(const std::vector<int>& node_ids, int rank, bool virtual_nodes);

// Collective over comm. ranks_per_node > 0: virtual nodes (as above); 0: the ranks that
// MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) puts together.
NodeMembership node_membership(MPI_Comm comm, int ranks_per_node);

}  // namespace mini5d::topology
