// SPDX-License-Identifier: BSD-3-Clause
// Placement with hwloc: discovery on synthetic nodes, core shares (disjoint, covering,
// spread over packages/NUMA, near GPUs), virtual nodes, the placement table and its
// refusal. Binding this process and membership over MPI (the [bind] and [mpi] cases)
// are in test_topology_binding.cpp, built into the same binary.
#include <mpi.h>
#include <sched.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <iostream>
#include <cstdlib>
#include <functional>
#include <set>
#include <sstream>

#include "mini5d/core/error.hpp"
#include "mini5d/topology/binding.hpp"
#include "mini5d/topology/membership.hpp"
#include "mini5d/topology/node.hpp"
#include "mini5d/topology/placement.hpp"
#include "input_error.hpp"


using namespace mini5d;
using namespace mini5d::topology;

using test::input_error;

namespace {

std::vector<int> range(int a, int b) {  // [a, b]
  std::vector<int> v;
  for (int i = a; i <= b; ++i) v.push_back(i);
  return v;
}

// A hand-made node (no hwloc): `packages` x `per_package` single-PU cores.
NodeTopology fake_node(int packages, int per_package) {
  NodeTopology n;
  n.packages = n.numa_nodes = packages;
  n.cores = n.pus = packages * per_package;
  for (int c = 0; c < n.cores; ++c) n.core_list.push_back(Core{c, c / per_package, c / per_package, -1, {c}});
  return n;
}

// Everything `distribute` promises for n ranks on `node`.
void check_shares(const NodeTopology& node, int n) {
  INFO(node.source << " with " << n << " ranks");
  const NodeBindings nb = distribute(node, n);
  REQUIRE(static_cast<int>(nb.ranks.size()) == n);
  std::vector<int> owners(static_cast<std::size_t>(node.cores), 0);
  for (const auto& b : nb.ranks) {
    REQUIRE(!b.cores.empty());
    std::vector<int> pus;
    for (int c : b.cores) {
      ++owners[static_cast<std::size_t>(c)];
      for (int pu : node.core_list[static_cast<std::size_t>(c)].pus) pus.push_back(pu);
    }
    std::sort(pus.begin(), pus.end());
    CHECK(b.pus == pus);
  }
  if (n <= node.cores) {
    for (int c = 0; c < node.cores; ++c) CHECK(owners[static_cast<std::size_t>(c)] == 1);  // disjoint, covering
    for (const auto& b : nb.ranks) CHECK(b.sharers == 1);
    // Even: shares differ by at most one core, or by a package-sized rounding.
    std::size_t lo = 1u << 30, hi = 0;
    for (const auto& b : nb.ranks) lo = std::min(lo, b.cores.size()), hi = std::max(hi, b.cores.size());
    CHECK(hi <= 2 * lo + 1);
  } else {
    // Oversubscribed: one core each, every core used, load within one rank of even.
    for (const auto& b : nb.ranks) CHECK(b.cores.size() == 1);
    for (int c = 0; c < node.cores; ++c) {
      CHECK(owners[static_cast<std::size_t>(c)] >= n / node.cores);
      CHECK(owners[static_cast<std::size_t>(c)] <= (n + node.cores - 1) / node.cores);
    }
    for (const auto& b : nb.ranks) CHECK(b.sharers == owners[static_cast<std::size_t>(b.cores[0])]);
    REQUIRE(!nb.notes.empty());
    CHECK(nb.notes.back().find("share " + std::to_string(node.cores) + " cores: oversubscribed") != std::string::npos);
  }
}

}  // namespace

TEST_CASE("topology: discovery of synthetic nodes", "[topology]") {
  const NodeTopology a = discover("pack:2 core:4 pu:1");
  CHECK(a.synthetic);
  CHECK(a.packages == 2);
  CHECK(a.cores == 8);
  CHECK(a.pus == 8);
  CHECK(a.gpus.empty());
  REQUIRE(a.core_list.size() == 8);
  CHECK(a.core_list[3].package == 0);
  CHECK(a.core_list[4].package == 1);
  CHECK(a.core_list[5].pus == std::vector<int>{5});

  const NodeTopology b = discover("pack:1 core:2 pu:2");
  CHECK(b.cores == 2);
  CHECK(b.pus == 4);
  CHECK(b.core_list[1].pus == std::vector<int>{2, 3});

  const NodeTopology c = discover("pack:2 numa:2 core:3 pu:1");
  CHECK(c.numa_nodes == 4);
  CHECK(c.cores == 12);
  CHECK(c.core_list[2].numa == 0);
  CHECK(c.core_list[3].numa == 1);
  CHECK(c.core_list[11].numa == 3);
  CHECK(c.core_list[11].package == 1);
  CHECK(describe(c).find("2 packages, 4 NUMA nodes, 0 L3 caches, 12 cores, 12 PUs") != std::string::npos);

  CHECK(input_error([] { discover("pack:2 bogus:x"); }) ==
        "synthetic topology: invalid hwloc synthetic topology \"pack:2 bogus:x\" (e.g. \"pack:2 core:4 pu:1\")");
}

TEST_CASE("topology: MINI5D_HWLOC_SYNTHETIC stands in for the machine", "[topology]") {
  setenv(kSyntheticEnv, "pack:4 core:2 pu:2", 1);
  const NodeTopology n = discover();
  const std::string bad = input_error([] {
    setenv(kSyntheticEnv, "nonsense", 1);
    discover();
  });
  unsetenv(kSyntheticEnv);
  CHECK(n.synthetic);
  CHECK(n.packages == 4);
  CHECK(n.cores == 8);
  CHECK(n.pus == 16);
  CHECK(bad.rfind("MINI5D_HWLOC_SYNTHETIC: invalid hwloc synthetic topology \"nonsense\"", 0) == 0);
}

TEST_CASE("topology: this machine", "[topology]") {
  const NodeTopology n = discover();
  CHECK_FALSE(n.synthetic);
  CHECK(n.cores >= 1);
  CHECK(n.pus >= n.cores);
  CHECK(static_cast<int>(n.core_list.size()) == n.cores);
  for (const auto& c : n.core_list) CHECK(!c.pus.empty());
  CHECK(describe(n).find("this machine") != std::string::npos);
}

TEST_CASE("topology: shares are disjoint, cover the cores, and spread (1..8 ranks)", "[topology]") {
  for (const char* desc : {"pack:2 core:4 pu:1", "pack:1 core:2 pu:2", "pack:2 numa:2 core:3 pu:1", "pack:4 core:2 pu:2"}) {
    const NodeTopology node = discover(desc);
    for (int n = 1; n <= 8; ++n) check_shares(node, n);
  }
  const NodeTopology two = discover("pack:2 core:4 pu:1");
  auto cores = [](const NodeBindings& nb) {
    std::vector<std::vector<int>> v;
    for (const auto& b : nb.ranks) v.push_back(b.cores);
    return v;
  };
  // One rank per package; three ranks: two on package 0, the third alone on package 1.
  CHECK(cores(distribute(two, 2)) == std::vector<std::vector<int>>{range(0, 3), range(4, 7)});
  CHECK(cores(distribute(two, 3)) == std::vector<std::vector<int>>{{0, 1}, {2, 3}, range(4, 7)});
  // One rank per NUMA node.
  const NodeTopology numa = discover("pack:2 numa:2 core:3 pu:1");
  CHECK(cores(distribute(numa, 4)) == std::vector<std::vector<int>>{range(0, 2), range(3, 5), range(6, 8), range(9, 11)});
  // Hyperthreads: a rank owns whole cores, both PUs.
  const NodeTopology ht = discover("pack:1 core:2 pu:2");
  const NodeBindings nb2 = distribute(ht, 2);
  CHECK(nb2.ranks[1].pus == std::vector<int>{2, 3});
  const NodeBindings nb4 = distribute(ht, 4);
  CHECK(nb4.ranks[2].cores == std::vector<int>{1});
  CHECK(nb4.ranks[2].sharers == 2);
  CHECK(format_binding(ht, nb4.ranks[2]) == "core 1 (PUs 2-3), package 0, NUMA 0, shared by 2 ranks");
}

TEST_CASE("topology: ranks sit near their GPU", "[topology]") {
  NodeTopology node = fake_node(2, 4);
  for (int g = 0; g < 4; ++g) node.gpus.push_back(Gpu{"cuda" + std::to_string(g), "", g < 2 ? range(0, 3) : range(4, 7), ""});
  const NodeBindings four = distribute(node, 4);
  for (int l = 0; l < 4; ++l) CHECK(four.ranks[static_cast<std::size_t>(l)].gpu == l);
  CHECK(four.ranks[0].cores == std::vector<int>{0, 1});
  CHECK(four.ranks[1].cores == std::vector<int>{2, 3});
  CHECK(four.ranks[2].cores == std::vector<int>{4, 5});
  CHECK(four.ranks[3].cores == std::vector<int>{6, 7});
  CHECK(format_binding(node, four.ranks[3]) == "cores 6-7 (PUs 6-7), package 1, NUMA 1, gpu 3 cuda3");
  // Two ranks, four GPUs: one per package, each with its package's cores.
  const NodeBindings two = distribute(node, 2);
  CHECK(two.ranks[0].gpu == 0);
  CHECK(two.ranks[1].gpu == 2);
  CHECK(two.ranks[1].cores == range(4, 7));
  // Eight ranks: two per GPU, still near it.
  const NodeBindings eight = distribute(node, 8);
  CHECK(eight.ranks[7].gpu == 3);
  CHECK(eight.ranks[7].cores == std::vector<int>{7});
  // Unknown locality: spread over the node as without GPUs.
  node.gpus[1].near_cores.clear();
  const NodeBindings fallback = distribute(node, 2);
  CHECK(fallback.ranks[1].cores == range(4, 7));
}

TEST_CASE("topology: virtual nodes and membership", "[topology]") {
  CHECK(virtual_node_ids(8, 4) == std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1});
  CHECK(virtual_node_ids(3, 1) == std::vector<int>{0, 1, 2});
  CHECK(input_error([] { virtual_node_ids(6, 4); }) == "parallel.ranks_per_node=4: must divide the number of ranks (6)");
  CHECK(input_error([] { virtual_node_ids(4, 8); }) == "parallel.ranks_per_node=8: must divide the number of ranks (4)");
  // MPI's node ids are arbitrary; nodes are renumbered by their lowest rank.
  const NodeMembership m = membership_from_ids({5, 5, 2, 2, 5}, 4, false);
  CHECK(m.node_of_rank == std::vector<int>{0, 0, 1, 1, 0});
  CHECK(m.node == 0);
  CHECK(m.nodes == 2);
  CHECK(m.local_rank == 2);
  CHECK(m.local_size == 3);
}

TEST_CASE("topology: placement table and refusal", "[topology]") {
  const auto four_per_node = virtual_node_ids(8, 4);
  ParallelConfig par;
  par.d = 2;
  par.t = 4;
  PlacementTable t = placement_table(par, four_per_node);
  CHECK(t.ranks == 8);
  CHECK(t.nodes == 2);
  CHECK(t.min_per_node == 4);
  CHECK(t.axis("t").degree == 4);
  CHECK(t.axis("t").groups == 2);
  CHECK(t.axis("t").intra_node());
  CHECK(t.axis("d").degree == 2);
  CHECK(t.axis("d").groups == 4);
  CHECK(t.axis("d").max_nodes == 2);
  CHECK(t.axis("d*c*e").degree == 2);
  CHECK_FALSE(t.axis("d*c*e").intra_node());
  CHECK_NOTHROW(check_placement(t, false));
  const std::string text = format_placement(t);
  CHECK(text.find("placement: 8 ranks on 2 nodes, 4 per node") != std::string::npos);
  CHECK(text.find("  t      tensor            4       2  intra-node\n") != std::string::npos);
  CHECK(text.find("  d      data              2       4  inter-node (groups span up to 2 nodes)\n") != std::string::npos);

  par.d = 1;
  par.t = 8;
  t = placement_table(par, four_per_node);
  CHECK(t.axis("t").max_nodes == 2);
  CHECK(input_error([&] { check_placement(t, false); }) ==
        "parallel.t=8: tensor groups cross nodes (4 ranks per node); choose t dividing the ranks per node or pass "
        "force_placement");
  CHECK_NOTHROW(check_placement(t, true));

  // [d, p, c, e, t] = [2, 1, 1, 2, 2]: t and e inside a node, the gradient groups across.
  par = ParallelConfig{};
  par.d = 2;
  par.e = 2;
  par.t = 2;
  t = placement_table(par, four_per_node);
  CHECK(t.axis("t").intra_node());
  CHECK(t.axis("e").intra_node());
  CHECK(t.axis("e").groups == 4);
  CHECK(t.axis("d*c*e").degree == 4);
  CHECK(t.axis("d*c*e").groups == 2);
  CHECK(t.axis("d*c*e").max_nodes == 2);
  CHECK(t.axis("d*c").degree == 2);
  CHECK_FALSE(t.axis("d*c").intra_node());
  // p=2, t=2, d=2: pipeline pairs (r, r+2) stay on a node, data pairs (r, r+4) do not.
  par = ParallelConfig{};
  par.d = 2;
  par.p = 2;
  par.t = 2;
  t = placement_table(par, four_per_node);
  CHECK(t.axis("p").intra_node());
  CHECK_FALSE(t.axis("d").intra_node());
  // All on one node: everything intra-node.
  par.d = par.p = par.t = 1;
  par.c = 2;
  par.e = 2;
  par.t = 2;
  t = placement_table(par, std::vector<int>(8, 0));
  for (const auto& a : t.axes) CHECK(a.intra_node());

  // Round-robin placement (rank r on node r % 2): t=2 divides 4 but still crosses.
  par = ParallelConfig{};
  par.d = 4;
  par.t = 2;
  t = placement_table(par, {0, 1, 0, 1, 0, 1, 0, 1});
  CHECK(input_error([&] { check_placement(t, false); }) ==
        "parallel.t=2: tensor groups cross nodes (4 ranks per node, not consecutive); place consecutive ranks on one "
        "node (block mapping) or pass force_placement");
  // Uneven nodes.
  t = placement_table(par, {0, 0, 0, 1, 1, 1, 1, 1});
  CHECK(t.min_per_node == 3);
  CHECK(t.max_per_node == 5);
  CHECK(input_error([&] { check_placement(t, false); }).find("(3 to 5 ranks per node); choose t") != std::string::npos);
  CHECK_THROWS_AS(placement_table(par, {0, 0}), std::invalid_argument);
}
