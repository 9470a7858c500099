// SPDX-License-Identifier: BSD-3-Clause
// Placement table: for a layout [d, p, c, e, t] (t fastest, world rank = row-major index,
// i.e. the Cartesian communicator is built without reordering) and the node of every
// rank, which axes stay inside a node and which cross nodes. Tensor parallelism
// all-reduces twice per block on the critical path, so a layout whose tensor groups
// cross nodes is refused unless forced. Pure: no MPI, testable with made-up node ids.
#pragma once
#include <ostream>
#include <string>
#include <vector>

#include "mini5d/core/deck.hpp"

namespace mini5d::topology {

struct AxisPlacement {
  std::string axis;   // "t", "e", "c", "p", "d", or a derived group "d*c*e", "d*c"
  std::string role;   // "tensor", ..., "dense-grad", "expert-grad"
  int degree = 1;     // = ranks in one group (for a derived group, the product)
  int groups = 1;     // number of such groups (= ranks / degree)
  int max_nodes = 1;  // the most nodes any one group spans
  bool intra_node() const { return max_nodes == 1; }
};

struct PlacementTable {
  int ranks = 1, nodes = 1;
  int min_per_node = 1, max_per_node = 1;  // ranks per node (equal on a uniform layout)
  std::vector<AxisPlacement> axes;         // t, e, c, p, d, then d*c*e, d*c
  const AxisPlacement& axis(const std::string& name) const;  // throws std::out_of_range
};

// node_of_rank.size() must equal par.ranks() (std::invalid_argument otherwise).
PlacementTable placement_table(const ParallelConfig& par, const std::vector<int>& node_of_rank);

// Throws InputError (one line) when tensor groups cross nodes, unless force_placement.
// The deck field that sets force_placement is the caller's to wire.
void check_placement(const PlacementTable& table, bool force_placement);

// The table for the start-up header and `mini5d topo`.
std::string format_placement(const PlacementTable& table);
std::ostream& operator<<(std::ostream& os, const PlacementTable& table);

}  // namespace mini5d::topology
