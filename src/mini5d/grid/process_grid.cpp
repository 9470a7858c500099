// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/grid/process_grid.hpp"

#include <stdexcept>

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
CommHandle sub(const CommHandle& cart, std::array<int, kAxes> keep) {
  MPI_Comm c;
  MPI_Cart_sub(cart.get(), keep.data(), &c);
  return CommHandle(c);
}
}  // namespace

ProcessGrid::ProcessGrid(MPI_Comm world, const ParallelConfig& par) {
  dims_ = {par.d, par.p, par.c, par.e, par.t};
  int world_size = 0;
  MPI_Comm_size(world, &world_size);
  if (world_size != par.ranks())
    throw std::invalid_argument("mini5d: process grid of " + std::to_string(par.ranks()) +
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
  for (int a = 0; a < kAxes; ++a) {
    std::array<int, kAxes> keep{};
    keep[a] = 1;
    axis_[a] = sub(cart_, keep);
  }
  dense_ = sub(cart_, {1, 0, 1, 1, 0});
  expert_ = sub(cart_, {1, 0, 1, 0, 0});
  expert_parallel_ = sub(cart_, {0, 0, 0, 1, 1});
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
