// SPDX-License-Identifier: BSD-3-Clause
// Network oversubscription (cluster file: links.inter_node.oversubscription and
// links.inter_node.nodes_per_leaf). A fat tree with R:1 oversubscription gives the nodes
// under one leaf switch the full inter-node rate among themselves, but only 1/R of it
// per device through the spine, when every device of a leaf sends out of it at once, as
// the ranks of a collective do. The planner expresses that as one more link tier:
//
//   leaf  tier: the inter-node link as stated, spanning nodes_per_leaf nodes;
//   spine tier: the inter-node link with bandwidth (and every curve point) / R, the same
//               latency, spanning the rest.
//
// tier_for_group (comm_model.hpp) then costs a collective on the spine exactly when its
// group's ranks do not fit in one aligned leaf (spans more nodes than a leaf holds, or
// straddles two), e.g. with nodes_per_leaf = 4 and 8 devices a node, a ring all-reduce
// of S bytes over n ranks spanning 16 nodes takes
//   2(n - 1) * latency + 2(n - 1)/n * S / (bandwidth / R).
// A group under cyclic mapping that leaves its node is costed on the spine (the
// outermost tier, as cyclic_group_tier says). Default: no oversubscription (1:1), the
// tiers unchanged.
#pragma once
#include "mini5d/plan/cost/cluster_desc.hpp"

namespace mini5d::plan {

// Splits the outermost tier of `cl` into a leaf tier of `nodes_per_leaf` nodes and a spine
// tier at 1/ratio of its bandwidth. ratio <= 1: nothing changes.
void add_oversubscribed_spine(ClusterDesc& cl, long long nodes_per_leaf, double ratio);

}  // namespace mini5d::plan
