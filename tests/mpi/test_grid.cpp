// SPDX-License-Identifier: BSD-3-Clause
// The process grid under mpiexec -n 8: for several layouts, every rank's coordinates
// follow the documented order ([d, p, c, e, t], t fastest, world rank = row-major
// index), each axis communicator holds exactly the ranks that differ only in that
// coordinate, the derived groups (d x c x e, d x c, e x t) hold exactly theirs, each in
// increasing rank (MPI_Cart_sub's order) and with the world's error handler, and the
// neighbours wrap on the context ring and stop at the ends of the other axes.
#include <mpi.h>

#include <catch2/catch.hpp>
#include <set>

#include "mini5d/grid/process_grid.hpp"
#include "mpi_util.hpp"

using namespace mini5d;
using test::all_ranks;
using grid::Axis;

namespace {
std::array<int, 5> coords_of(int rank, const std::array<int, 5>& dims) {
  std::array<int, 5> c{};
  for (int a = 4; a >= 0; --a) {
    c[a] = rank % dims[a];
    rank /= dims[a];
  }
  return c;
}
int rank_of(const std::array<int, 5>& c, const std::array<int, 5>& dims) {
  int r = 0;
  for (int a = 0; a < 5; ++a) r = r * dims[a] + c[a];
  return r;
}
// World ranks of a communicator's members, in its rank order (MPI_Cart_sub's order is
// increasing grid rank: ZeRO's shards and the all-to-alls' expert placement follow it).
std::vector<int> members(MPI_Comm c) {
  int n = 0, me = 0;
  MPI_Comm_size(c, &n);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  std::vector<int> all(n);
  MPI_Allgather(&me, 1, MPI_INT, all.data(), 1, MPI_INT, c);
  return all;
}
// The communicator's error handler is the world's (one clear line per MPI error).
bool world_handler(MPI_Comm c) {
  MPI_Errhandler mine, world;
  MPI_Comm_get_errhandler(c, &mine);
  MPI_Comm_get_errhandler(MPI_COMM_WORLD, &world);
  const bool same = mine == world;
  MPI_Errhandler_free(&mine);
  MPI_Errhandler_free(&world);
  return same;
}
// World ranks that agree with `me` on every axis not in `free_axes`.
std::vector<int> expected_members(int me, const std::array<int, 5>& dims, std::set<int> free_axes) {
  std::vector<int> out;
  const auto mine = coords_of(me, dims);
  for (int r = 0; r < dims[0] * dims[1] * dims[2] * dims[3] * dims[4]; ++r) {
    const auto c = coords_of(r, dims);
    bool same = true;
    for (int a = 0; a < 5; ++a)
      if (!free_axes.count(a) && c[a] != mine[a]) same = false;
    if (same) out.push_back(r);
  }
  return out;
}
}  // namespace

TEST_CASE("coordinates, axis groups, derived groups and neighbours on 8 ranks", "[grid][mpi]") {
  int me = 0, n = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  REQUIRE(n == 8);
  // A handler other than the default, as the app installs its own (comm/mpi_error_line.hpp):
  // every communicator of the grid must carry it.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  // [d, p, c, e, t]
  const std::vector<std::array<int, 5>> layouts = {
      {8, 1, 1, 1, 1}, {1, 1, 1, 1, 8}, {2, 2, 1, 1, 2}, {2, 1, 2, 2, 1},
      {1, 2, 4, 1, 1}, {1, 8, 1, 1, 1}, {1, 1, 8, 1, 1}};
  for (const auto& dims : layouts) {
    grid::ProcessGrid g(MPI_COMM_WORLD, dims);
    INFO(g.describe());
    bool ok = g.rank() == me && g.coords() == coords_of(me, dims);
    for (int a = 0; a < 5; ++a) {
      ok = ok && g.axis(Axis(a)).size() == dims[a];
      ok = ok && g.axis(Axis(a)).rank() == g.coords()[a];
      ok = ok && members(g.axis(Axis(a)).get()) == expected_members(me, dims, {a});
      ok = ok && world_handler(g.axis(Axis(a)).get());
      // Neighbours: the context axis is a ring, the others stop at their ends.
      const auto nb = g.neighbours(Axis(a));
      auto c = g.coords();
      const bool ring = a == int(Axis::c);
      c[a] = g.coords()[a] - 1;
      const int back = c[a] >= 0 ? rank_of(c, dims) : ring ? (c[a] += dims[a], rank_of(c, dims)) : MPI_PROC_NULL;
      c = g.coords();
      c[a] = g.coords()[a] + 1;
      const int fwd = c[a] < dims[a] ? rank_of(c, dims) : ring ? (c[a] -= dims[a], rank_of(c, dims)) : MPI_PROC_NULL;
      ok = ok && nb[0] == back && nb[1] == fwd;
    }
    // Dense-gradient group d x c x e, expert-gradient group d x c, expert-parallel e x t.
    ok = ok && members(g.dense_grad().get()) == expected_members(me, dims, {0, 2, 3});
    ok = ok && members(g.expert_grad().get()) == expected_members(me, dims, {0, 2});
    ok = ok && members(g.expert_parallel().get()) == expected_members(me, dims, {3, 4});
    for (const auto* h : {&g.dense_grad(), &g.expert_grad(), &g.expert_parallel()}) ok = ok && world_handler(h->get());
    ok = ok && g.dense_grad().size() == dims[0] * dims[2] * dims[3];
    ok = ok && g.data_shards() == dims[0] * dims[3];
    CHECK(all_ranks(ok));
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

TEST_CASE("all axes at 1: a grid of one rank on each rank's own communicator", "[grid][mpi]") {
  grid::ProcessGrid g(MPI_COMM_SELF, {1, 1, 1, 1, 1});
  bool ok = g.size() == 1 && g.rank() == 0 && g.coords() == std::array<int, 5>{0, 0, 0, 0, 0};
  for (int a = 0; a < 5; ++a) {
    ok = ok && g.axis(Axis(a)).size() == 1;
    // A ring of one is its own neighbour; the other axes have none.
    const int expect = a == int(Axis::c) ? 0 : MPI_PROC_NULL;
    ok = ok && g.neighbours(Axis(a)) == std::array<int, 2>{expect, expect};
  }
  ok = ok && g.dense_grad().size() == 1 && g.expert_grad().size() == 1 && g.data_shards() == 1;
  ok = ok && g.describe() == "DP(1)-PP(1)-CP(1)-EP(1)-TP(1) rank 0 coords (0,0,0,0,0)";
  CHECK(all_ranks(ok));
}

TEST_CASE("the grid describes itself", "[grid][mpi]") {
  grid::ProcessGrid g(MPI_COMM_WORLD, {2, 2, 1, 1, 2});  // [d, p, c, e, t]
  int me = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  if (me == 5) CHECK(g.describe() == "DP(2)-PP(2)-CP(1)-EP(1)-TP(2) rank 5 coords (1,0,0,0,1)");
  CHECK(all_ranks(g.size() == 8));
}
