// SPDX-License-Identifier: BSD-3-Clause
// Placement with hwloc, the part that touches the process and MPI: bind_this_rank on a
// synthetic node and on this machine ([bind]: sizes OpenBLAS too), and node membership
// over MPI ([mpi]: also run under mpiexec -n 4, every check reduced over the
// communicator before it is asserted). Built into the test_topology binary.
#include <mpi.h>
#include <sched.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include "input_error.hpp"
#include "mini5d/commands/topo_command.hpp"
#include "mini5d/topology/binding.hpp"
#include "mini5d/topology/membership.hpp"
#include "mini5d/topology/node.hpp"
#include "mini5d/topology/placement.hpp"

// OpenBLAS's thread count, when the BLAS is OpenBLAS (weak: absent otherwise).
extern "C" int openblas_get_num_threads() __attribute__((weak));
extern "C" void openblas_set_num_threads(int) __attribute__((weak));

using namespace mini5d;
using namespace mini5d::topology;

using test::input_error;

TEST_CASE("topology: bind_this_rank on a synthetic node computes, binds nothing", "[topology]") {
  setenv("OPENBLAS_NUM_THREADS", "1", 1);
  cpu_set_t before;
  sched_getaffinity(0, sizeof before, &before);
  const NodeTopology node = discover("pack:2 core:4 pu:1");
  const NodeMembership m = membership_from_ids(virtual_node_ids(8, 4), 5, true);
  const BindReport r = bind_this_rank(node, m);
  CHECK_FALSE(r.bound);
  CHECK(r.binding.local_rank == 1);
  CHECK(r.binding.cores == std::vector<int>{2, 3});
  CHECK(r.blas_threads == 1);
  CHECK(std::find(r.notes.begin(), r.notes.end(), "synthetic topology: binding computed, not applied") != r.notes.end());
  CHECK(std::find(r.notes.begin(), r.notes.end(),
                  "OPENBLAS_NUM_THREADS=1 set by the user: kept (this rank owns 2 cores)") != r.notes.end());
  cpu_set_t after;
  sched_getaffinity(0, sizeof after, &after);
  CHECK(CPU_EQUAL(&before, &after));
}

// Needs two cores to choose between. Run on its own by CTest (test_topology_bind),
// which reports "SKIPPED:" on a one-core host as a skipped test, not a pass.
TEST_CASE("topology: bind_this_rank binds this process and sizes OpenBLAS", "[topology][bind]") {
  const NodeTopology node = discover();
  if (node.cores < 2) {
    std::cout << "SKIPPED: this host has " << node.cores << " core(s); binding needs 2 to choose between\n";
    return;
  }
  cpu_set_t before;
  sched_getaffinity(0, sizeof before, &before);
  const NodeMembership m = membership_from_ids({0, 0}, 1, false);  // the second of two ranks
  const std::vector<int> expected = distribute(node, 2).ranks[1].pus;

  setenv(kNoBindEnv, "1", 1);
  const BindReport off = bind_this_rank(node, m);
  unsetenv(kNoBindEnv);
  CHECK_FALSE(off.bound);

  unsetenv("OPENBLAS_NUM_THREADS");
  const BindReport on = bind_this_rank(node, m);
  cpu_set_t now;
  sched_getaffinity(0, sizeof now, &now);
  std::vector<int> cpus;
  for (int i = 0; i < CPU_SETSIZE; ++i)
    if (CPU_ISSET(i, &now)) cpus.push_back(i);
  sched_setaffinity(0, sizeof before, &before);
  const int blas = openblas_get_num_threads ? openblas_get_num_threads() : -1;
  if (openblas_set_num_threads) openblas_set_num_threads(1);
  setenv("OPENBLAS_NUM_THREADS", "1", 1);

  CHECK(on.bound);
  CHECK(cpus == expected);
  CHECK(on.blas_threads == static_cast<int>(distribute(node, 2).ranks[1].cores.size()));
  if (openblas_get_num_threads) CHECK(blas == on.blas_threads);
}

TEST_CASE("topology: node membership over MPI, virtual nodes of 2", "[topology][mpi]") {
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const int per = size % 2 == 0 ? 2 : 1;
  int ok = 1;
  auto expect = [&](bool cond) { ok = ok && cond; };

  const NodeMembership m = node_membership(comm, per);
  expect(m.virtual_nodes && m.nodes == size / per && m.node == rank / per && m.local_rank == rank % per &&
         m.local_size == per && m.host_local_size == size && m.node_of_rank == virtual_node_ids(size, per));
  const NodeMembership real = node_membership(comm, 0);  // one machine runs every rank here
  expect(!real.virtual_nodes && real.nodes == 1 && real.local_rank == rank && real.local_size == size);

  // Each virtual node is a synthetic two-package node: shares disjoint within a node.
  const NodeTopology node = discover("pack:2 core:4 pu:1");
  const BindReport r = bind_this_rank(node, m);
  std::vector<int> mask(8, 0), all(static_cast<std::size_t>(8 * size), 0);
  for (int c : r.binding.cores) mask[static_cast<std::size_t>(c)] = 1;
  MPI_Allgather(mask.data(), 8, MPI_INT, all.data(), 8, MPI_INT, comm);
  for (int n = 0; n < m.nodes; ++n)
    for (int c = 0; c < 8; ++c) {
      int owners = 0;
      for (int l = 0; l < per; ++l) owners += all[static_cast<std::size_t>((n * per + l) * 8 + c)];
      expect(owners == 1);
    }
  expect(!r.bound && r.binding.cores.size() == static_cast<std::size_t>(8 / per));

  // Tensor groups of the node size stay inside; one tensor group over everything crosses.
  ParallelConfig par;
  par.t = per;
  par.d = size / per;
  expect(placement_table(par, m.node_of_rank).axis("t").intra_node());
  if (m.nodes > 1) {
    par.t = size;
    par.d = 1;
    expect(input_error([&] { check_placement(placement_table(par, m.node_of_rank), false); })
               .rfind("parallel.t=" + std::to_string(size) + ": tensor groups cross nodes", 0) == 0);
  }
  // A ranks_per_node that does not divide the ranks fails on every rank, before any collective.
  if (size > 1)
    expect(input_error([&] { node_membership(comm, size + 1); }) ==
           "parallel.ranks_per_node=" + std::to_string(size + 1) + ": must divide the number of ranks (" +
               std::to_string(size) + ")");

  // `mini5d topo` on these ranks: rank 0 prints the gathered table.
  std::ostringstream out;
  commands::topo_command(comm,
               "",
               {"parallel.t=" + std::to_string(per), "parallel.d=" + std::to_string(size / per),
                "parallel.ranks_per_node=" + std::to_string(per)},
               out);
  if (rank == 0) {
    expect(out.str().find("nodes: " + std::to_string(size / per) + ", ") != std::string::npos);
    expect(out.str().find("virtual nodes of parallel.ranks_per_node=" + std::to_string(per) + " ranks") !=
           std::string::npos);
    expect(out.str().find("  rank " + std::to_string(size - 1) + "  node " + std::to_string(size / per - 1)) !=
           std::string::npos);
  } else {
    expect(out.str().empty());
  }

  int all_ok = 0;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm);
  MPI_Comm_free(&comm);
  INFO("rank " << rank << " ok=" << ok);
  REQUIRE(all_ok == 1);
}
