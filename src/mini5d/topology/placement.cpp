// SPDX-License-Identifier: BSD-3-Clause
// Placement table (placement.hpp): group enumeration over the row-major [d,p,c,e,t] grid.
#include "mini5d/topology/placement.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <set>
#include <sstream>
#include <stdexcept>

#include "mini5d/core/error.hpp"

namespace mini5d::topology {
namespace {

constexpr int kDims = 5;  // d, p, c, e, t: the Cartesian order, t fastest

// The ranks sharing every coordinate outside `in_group` form one group; report how many
// nodes the widest such group spans.
AxisPlacement group_placement(const std::array<int, kDims>& dims, const std::array<bool, kDims>& in_group,
                              const std::vector<int>& node_of_rank, std::string axis, std::string role) {
  AxisPlacement a;
  a.axis = std::move(axis);
  a.role = std::move(role);
  for (int i = 0; i < kDims; ++i)
    if (in_group[static_cast<std::size_t>(i)]) a.degree *= dims[static_cast<std::size_t>(i)];
  const int ranks = static_cast<int>(node_of_rank.size());
  a.groups = ranks / a.degree;
  std::vector<std::set<int>> nodes(static_cast<std::size_t>(a.groups));
  for (int r = 0; r < ranks; ++r) {
    int rest = r, key = 0, scale = 1;
    for (int i = kDims - 1; i >= 0; --i) {  // peel coordinates from the fastest (t) up
      const int dim = dims[static_cast<std::size_t>(i)], coord = rest % dim;
      rest /= dim;
      if (!in_group[static_cast<std::size_t>(i)]) {
        key += coord * scale;
        scale *= dim;
      }
    }
    nodes[static_cast<std::size_t>(key)].insert(node_of_rank[static_cast<std::size_t>(r)]);
  }
  a.max_nodes = 0;
  for (const auto& s : nodes) a.max_nodes = std::max(a.max_nodes, static_cast<int>(s.size()));
  return a;
}

}  // namespace

const AxisPlacement& PlacementTable::axis(const std::string& name) const {
  for (const auto& a : axes)
    if (a.axis == name) return a;
  throw std::out_of_range("placement table has no axis " + name);
}

PlacementTable placement_table(const ParallelConfig& par, const std::vector<int>& node_of_rank) {
  const std::array<int, kDims> dims{par.d, par.p, par.c, par.e, par.t};
  if (static_cast<int>(node_of_rank.size()) != par.ranks())
    throw std::invalid_argument("placement_table: " + std::to_string(node_of_rank.size()) +
                                " node ids for a layout of " + std::to_string(par.ranks()) + " ranks");
  PlacementTable t;
  t.ranks = par.ranks();
  std::vector<int> per_node;
  for (int n : node_of_rank) {
    if (n >= static_cast<int>(per_node.size())) per_node.resize(static_cast<std::size_t>(n) + 1, 0);
    ++per_node[static_cast<std::size_t>(n)];
  }
  per_node.erase(std::remove(per_node.begin(), per_node.end(), 0), per_node.end());
  t.nodes = static_cast<int>(per_node.size());
  t.min_per_node = *std::min_element(per_node.begin(), per_node.end());
  t.max_per_node = *std::max_element(per_node.begin(), per_node.end());
  //                                 d      p      c      e      t
  t.axes.push_back(group_placement(dims, {false, false, false, false, true}, node_of_rank, "t", "tensor"));
  t.axes.push_back(group_placement(dims, {false, false, false, true, false}, node_of_rank, "e", "expert"));
  t.axes.push_back(group_placement(dims, {false, false, true, false, false}, node_of_rank, "c", "context"));
  t.axes.push_back(group_placement(dims, {false, true, false, false, false}, node_of_rank, "p", "pipeline"));
  t.axes.push_back(group_placement(dims, {true, false, false, false, false}, node_of_rank, "d", "data"));
  t.axes.push_back(group_placement(dims, {true, false, true, true, false}, node_of_rank, "d*c*e", "dense-grad"));
  t.axes.push_back(group_placement(dims, {true, false, true, false, false}, node_of_rank, "d*c", "expert-grad"));
  return t;
}

void check_placement(const PlacementTable& table, bool force_placement) {
  const AxisPlacement& t = table.axis("t");
  if (t.intra_node() || force_placement) return;
  const bool uniform = table.min_per_node == table.max_per_node;
  const std::string per_node = uniform ? std::to_string(table.max_per_node)
                                       : std::to_string(table.min_per_node) + " to " + std::to_string(table.max_per_node);
  std::string msg = "parallel.t=" + std::to_string(t.degree) + ": tensor groups cross nodes (" + per_node +
                    " ranks per node";
  if (uniform && table.max_per_node % t.degree == 0)
    msg += ", not consecutive); place consecutive ranks on one node (block mapping)";
  else
    msg += "); choose t dividing the ranks per node";
  throw InputError(msg + " or pass force_placement");
}

std::string format_placement(const PlacementTable& t) {
  std::ostringstream os;
  os << "placement: " << t.ranks << " rank" << (t.ranks == 1 ? "" : "s") << " on " << t.nodes << " node"
     << (t.nodes == 1 ? "" : "s") << ", ";
  if (t.min_per_node == t.max_per_node)
    os << t.max_per_node;
  else
    os << t.min_per_node << " to " << t.max_per_node;
  os << " per node\n  axis   role         degree  groups  placement\n";
  char line[96];
  for (const auto& a : t.axes) {
    std::snprintf(line, sizeof line, "  %-6s %-11s %7d %7d  ", a.axis.c_str(), a.role.c_str(), a.degree, a.groups);
    os << line;
    if (a.degree == 1)
      os << "-";
    else if (a.intra_node())
      os << "intra-node";
    else
      os << "inter-node (groups span up to " << a.max_nodes << " nodes)";
    os << "\n";
  }
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const PlacementTable& table) { return os << format_placement(table); }

}  // namespace mini5d::topology
