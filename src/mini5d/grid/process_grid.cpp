// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/grid/process_grid.hpp"

#include <stdexcept>
#include <vector>

namespace mini5d::grid {

const char* axis_name(Axis a) {
  static const char* n[] = {"d", "p", "c", "e", "t"};
  return n[int(a)];
}
const char* axis_label(Axis a) {
  static const char* n[] = {"DP", "PP", "CP", "EP", "TP"};
  return n[int(a)];
}

CommHandle::CommHandle(MPI_Comm c)
    : comm_(new MPI_Comm(c), [](MPI_Comm* p) {
        int finalized = 0;
        MPI_Finalized(&finalized);
        if (!finalized && *p != MPI_COMM_NULL) MPI_Comm_free(p);
        delete p;
      }) {}

int CommHandle::rank() const {
  int r = 0;
  MPI_Comm_rank(get(), &r);
  return r;
}
int CommHandle::size() const {
  int s = 0;
  MPI_Comm_size(get(), &s);
  return s;
}

namespace {
// The sub-grid's communicator, made with MPI_Comm_create_group: collective over its own
// members only. MPI_Cart_sub (the same members, the same order) is collective over the
// whole grid, each call a world-wide split: 8 of them took 4.8 s of every trainer's
// start-up at 32 ranks on 2 cores; built this way they are exchanges within each group.
// The members are the ranks whose coordinates equal this rank's on every axis `keep`
// leaves out, in increasing cart rank, MPI_Cart_sub's order. The grid needs no topology
// on the sub-communicators (no Cart call is made on them).
CommHandle sub(const CommHandle& cart, const std::array<int, kAxes>& keep, int tag) {
  int size = 0, me = 0;
  MPI_Comm_size(cart.get(), &size);
  MPI_Comm_rank(cart.get(), &me);
  std::array<int, kAxes> mine{}, theirs{};
  MPI_Cart_coords(cart.get(), me, kAxes, mine.data());
  std::vector<int> ranks;
  for (int r = 0; r < size; ++r) {
    MPI_Cart_coords(cart.get(), r, kAxes, theirs.data());  // local: no communication
    bool same = true;
    for (int a = 0; a < kAxes; ++a) same = same && (keep[a] || theirs[a] == mine[a]);
    if (same) ranks.push_back(r);
  }
  MPI_Group all, members;
  MPI_Comm_group(cart.get(), &all);
  MPI_Group_incl(all, int(ranks.size()), ranks.data(), &members);
  MPI_Comm c;
  MPI_Comm_create_group(cart.get(), members, tag, &c);
  MPI_Group_free(&members);
  MPI_Group_free(&all);
  // MPICH 4.0 leaves the new communicator on MPI_ERRORS_ARE_FATAL where the standard has
  // it inherit the parent's handler: set the grid's own (comm/mpi_error_line.hpp: one
  // clear line per MPI error).
  MPI_Errhandler handler;
  MPI_Comm_get_errhandler(cart.get(), &handler);
  MPI_Comm_set_errhandler(c, handler);
  MPI_Errhandler_free(&handler);
  return CommHandle(c);
}
}  // namespace

ProcessGrid::ProcessGrid(MPI_Comm world, const std::array<int, kAxes>& dims) : dims_(dims) {
  int world_size = 0;
  MPI_Comm_size(world, &world_size);
  long long ranks = 1;
  for (int d : dims_) ranks *= d;
  if (world_size != ranks)
    throw std::invalid_argument("mini5d: process grid of " + std::to_string(ranks) +
                                " ranks over a communicator of " + std::to_string(world_size));
  // Only the context axis wraps (ring attention passes K/V around it).
  std::array<int, kAxes> periodic{0, 0, 1, 0, 0};
  // No reordering: cart rank = world rank, so placement (t fastest) is predictable.
  MPI_Comm cart;
  MPI_Cart_create(world, kAxes, dims_.data(), periodic.data(), 0, &cart);
  cart_ = CommHandle(cart);
  MPI_Comm_rank(cart, &rank_);
  MPI_Comm_size(cart, &size_);
  MPI_Cart_coords(cart, rank_, kAxes, coords_.data());
  // One tag per sub-grid: a rank is in one group of each, so no two overlap in a call.
  for (int a = 0; a < kAxes; ++a) {
    std::array<int, kAxes> keep{};
    keep[a] = 1;
    axis_[a] = sub(cart_, keep, a);
  }
  dense_ = sub(cart_, {1, 0, 1, 1, 0}, kAxes);
  expert_ = sub(cart_, {1, 0, 1, 0, 0}, kAxes + 1);
  expert_parallel_ = sub(cart_, {0, 0, 0, 1, 1}, kAxes + 2);
}

std::array<int, 2> ProcessGrid::neighbours(Axis a) const {
  int src = MPI_PROC_NULL, dst = MPI_PROC_NULL;
  MPI_Cart_shift(cart_.get(), int(a), 1, &src, &dst);
  return {src, dst};
}

std::string ProcessGrid::describe() const {
  std::string s;
  for (int a = 0; a < kAxes; ++a)
    s += std::string(a ? "-" : "") + axis_label(Axis(a)) + "(" + std::to_string(dims_[a]) + ")";
  s += " rank " + std::to_string(rank_) + " coords (";
  for (int a = 0; a < kAxes; ++a) s += (a ? "," : "") + std::to_string(coords_[a]);
  return s + ")";
}

}  // namespace mini5d::grid
