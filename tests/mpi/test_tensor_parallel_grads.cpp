// SPDX-License-Identifier: BSD-3-Clause
// Tensor-parallel layers in fp64 under mpiexec -n 2 (t = 2), with and without sequence
// parallelism, on a model small enough for finite differences:
//   slices: every rank's gradient of every tensor equals the matching slice of the
//           single-rank model's gradient (itself checked against finite differences in
//           test_model_gradients): the column- and row-parallel linears (QKV by heads,
//           projections, MLP), the vocab-parallel embedding and cross-entropy;
//   finite differences on the sharded model itself: a logical element is perturbed
//           where it lives (on its owner, or on every rank for a replicated tensor),
//           and the collective loss moves as the gradient says.
#include <mpi.h>

#include <catch2/catch.hpp>
#include <cmath>

#include "mini5d/comm/communicator.hpp"
#include "mini5d/model/gpt.hpp"
#include "mpi_util.hpp"

using namespace mini5d;
using test::all_ranks;
using test::world_max;
using test::world_rank;

namespace {
using Model = model::Gpt<double>;
using HostD = Kokkos::View<double*, Kokkos::HostSpace>;

ModelConfig small_model() {
  ModelConfig m;
  m.vocab = 12;
  m.d_model = 8;
  m.layers = 2;
  m.heads = 2;
  m.seq = 6;
  m.ffn = 16;
  return m;
}
constexpr int kBatch = 2;

struct Batch {
  Vec<int> in, tg;
  Batch(int n, int vocab) : in("in", n), tg("tg", n) {
    auto hi = Kokkos::create_mirror_view(in);
    auto ht = Kokkos::create_mirror_view(tg);
    for (int i = 0; i < n; ++i) {
      hi(i) = (7 * i + 3) % vocab;
      ht(i) = (5 * i + 1) % vocab;
    }
    Kokkos::deep_copy(in, hi);
    Kokkos::deep_copy(tg, ht);
  }
};

double loss_of(Model& m, const Batch& b) {
  const double n = double(kBatch) * m.config().seq;
  return m.forward(b.in, b.tg, 1.0 / n) / n;
}

// The logical (row-major) index of each element of this rank's part of tensor t.
std::vector<std::int64_t> logical_indices(const model::TensorSpec& t) {
  std::vector<ShardBlock> blocks;
  model::append_part_blocks(t, 0, t.size(), 0, blocks);
  std::vector<std::int64_t> out(std::size_t(t.size()));
  const std::int64_t cols = t.global_shape.size() == 2 ? t.global_shape[1] : 1;
  for (const auto& b : blocks) {
    const bool two_d = b.offset.size() == 2;
    const std::int64_t rows = b.extent[0], width = two_d ? b.extent[1] : 1;
    for (std::int64_t i = 0; i < rows * width; ++i)
      out[std::size_t(b.local_offset + i)] =
          two_d ? (b.offset[0] + i / width) * cols + b.offset[1] + i % width : b.offset[0] + i;
  }
  return out;
}
}  // namespace

TEST_CASE("t = 2: sharded gradients are slices of the single-rank gradients; finite differences agree",
          "[tp][mpi][gradients]") {
  REQUIRE(test::world_size() == 2);
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  comm::Communicator group(grid::CommHandle(dup), "tp", comm::Transport::staged);
  tp::TpComm tpc(group);
  const auto cfg = small_model();
  const Batch batch(kBatch * cfg.seq, cfg.vocab);
  const std::uint64_t seed = 99;

  Model whole(cfg, kBatch);
  whole.init_params(seed);
  whole.zero_grads();
  const double want_loss = loss_of(whole, batch);
  whole.backward();
  auto whole_g = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), whole.grads);

  for (bool sp : {false, true}) {
    INFO("sp=" << sp);
    Model part(cfg, kBatch, Model::Owns::params_and_grads, {&tpc, sp, model::Recompute::none});
    part.init_params(seed);
    part.zero_grads();
    const double got_loss = loss_of(part, batch);
    part.backward();
    CHECK(world_max(std::abs(got_loss - want_loss)) < 1e-12);
    auto g = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), part.grads);
    // Replicated tensors hold partial sums with SP (each rank saw its own tokens).
    double worst_slice = 0;
    for (const auto& t : part.layout().tensors()) {
      const auto& w = whole.layout().at(t.name);
      const auto idx = logical_indices(t);
      std::vector<double> mine(std::size_t(t.size()));
      for (std::int64_t i = 0; i < t.size(); ++i) mine[std::size_t(i)] = g(t.offset + i);
      if (t.replicated && sp)
        MPI_Allreduce(MPI_IN_PLACE, mine.data(), int(mine.size()), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      for (std::int64_t i = 0; i < t.size(); ++i) {
        const double ref = whole_g(w.offset + idx[std::size_t(i)]);
        worst_slice = std::max(worst_slice, std::abs(mine[std::size_t(i)] - ref) / std::max(1e-3, std::abs(ref)));
      }
    }
    worst_slice = world_max(worst_slice);
    if (world_rank() == 0) std::printf("t=2 sp=%d: worst relative gradient-slice difference %.3g\n", sp, worst_slice);
    CHECK(worst_slice < 1e-10);

    // Finite differences on the sharded model: 3 elements of every tensor, each owner
    // in turn (all ranks together for a replicated tensor).
    const double h = 1e-5;
    double worst_fd = 0;
    auto params = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), part.params);
    for (const auto& t : part.layout().tensors()) {
      std::vector<double> grad(std::size_t(t.size()));
      for (std::int64_t i = 0; i < t.size(); ++i) grad[std::size_t(i)] = g(t.offset + i);
      if (t.replicated && sp)
        MPI_Allreduce(MPI_IN_PLACE, grad.data(), int(grad.size()), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      for (int owner = 0; owner < (t.replicated ? 1 : 2); ++owner) {
        for (int k = 0; k < 3; ++k) {
          const std::int64_t i = (std::int64_t(k) * 7919 + 3) % t.size();
          const bool mine = t.replicated || world_rank() == owner;
          auto shift = [&](double by) {
            if (mine) params(t.offset + i) += by;
            Kokkos::deep_copy(part.params, params);
          };
          shift(h);
          const double up = loss_of(part, batch);
          shift(-2 * h);
          const double down = loss_of(part, batch);
          shift(h);
          const double fd = (up - down) / (2 * h);
          double analytic = mine ? grad[std::size_t(i)] : 0.0;
          if (!t.replicated) MPI_Allreduce(MPI_IN_PLACE, &analytic, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
          worst_fd = std::max(worst_fd, std::abs(fd - analytic) / std::max(1e-2, std::abs(analytic)));
        }
      }
    }
    worst_fd = world_max(worst_fd);
    if (world_rank() == 0) std::printf("t=2 sp=%d: worst finite-difference error %.3g\n", sp, worst_fd);
    CHECK(worst_fd < 1e-6);
  }
  CHECK(all_ranks(true));
}
