// SPDX-License-Identifier: BSD-3-Clause
// The process grid: one Cartesian communicator over every rank with dims
// [d, p, c, e, t] (t fastest, so consecutive ranks form a tensor group and block
// placement keeps it inside a node; the context axis periodic, it is a ring), one
// sub-communicator per axis (the sub-grid MPI_Cart_sub would give, made with
// MPI_Comm_create_group: collective over its members only), and the derived groups
// training needs:
//   dense-gradient group d x c x e (ZeRO shards over it),
//   expert-gradient group d x c,
//   expert-parallel group e x t (the MoE all-to-all: each rank of it holds
//   experts/(e*t) experts; rank = e-coordinate * t + t-coordinate).
// The grid owns every communicator (RAII handles, each freed once) and duplicates
// what it is given; parallel/axis_comms.hpp wraps them for accounting. Below main,
// MPI_COMM_WORLD is read only where a whole-job view is the point: the few readers are
// listed in docs/architecture.md ("Who owns which communicator"). docs/parallelism.md.
#pragma once
#include <mpi.h>

#include <array>
#include <memory>
#include <string>


namespace mini5d::grid {

enum class Axis { d = 0, p = 1, c = 2, e = 3, t = 4 };
constexpr int kAxes = 5;
const char* axis_name(Axis a);   // "d", "p", ...
const char* axis_label(Axis a);  // "DP", "PP", "CP", "EP", "TP"

// A communicator freed exactly once, when its last holder goes away.
class CommHandle {
 public:
  CommHandle() = default;
  explicit CommHandle(MPI_Comm c);  // takes ownership
  MPI_Comm get() const { return comm_ ? *comm_ : MPI_COMM_NULL; }
  int rank() const;
  int size() const;

 private:
  std::shared_ptr<MPI_Comm> comm_;
};

class ProcessGrid {
 public:
  // Collective over `world`, whose size must equal the product of the degrees `dims`,
  // [d, p, c, e, t] (checked by the caller's layout validation; a mismatch here throws).
  ProcessGrid(MPI_Comm world, const std::array<int, kAxes>& dims);

  int rank() const { return rank_; }
  int size() const { return size_; }
  int dim(Axis a) const { return dims_[int(a)]; }
  int coord(Axis a) const { return coords_[int(a)]; }
  const std::array<int, kAxes>& dims() const { return dims_; }
  const std::array<int, kAxes>& coords() const { return coords_; }

  const CommHandle& cart() const { return cart_; }
  const CommHandle& axis(Axis a) const { return axis_[int(a)]; }
  const CommHandle& dense_grad() const { return dense_; }   // d x c x e
  const CommHandle& expert_grad() const { return expert_; } // d x c
  const CommHandle& expert_parallel() const { return expert_parallel_; }  // e x t

  // Ranks (in the Cartesian communicator) one step back and forward along an axis;
  // MPI_PROC_NULL past the ends of a non-periodic axis.
  std::array<int, 2> neighbours(Axis a) const;
  // Which data shard this rank's dense layers see: index in [0, d*e).
  int data_index() const { return coord(Axis::d) * dim(Axis::e) + coord(Axis::e); }
  int data_shards() const { return dim(Axis::d) * dim(Axis::e); }

  // "DP(2)-PP(1)-CP(1)-EP(1)-TP(1) rank 1 coords (1,0,0,0,0)"
  std::string describe() const;

 private:
  int rank_ = 0, size_ = 1;
  std::array<int, kAxes> dims_{}, coords_{};
  CommHandle cart_, dense_, expert_, expert_parallel_;
  std::array<CommHandle, kAxes> axis_;
};

}  // namespace mini5d::grid
