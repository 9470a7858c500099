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
// With SP each rank's gradient of a replicated tensor is a partial sum over its own
// tokens; the fp64 case adds the partials up itself, which checks the partials but not
// the trainer's sum of them (tp::ReplicatedGrads, fp32 only). The fp32 case runs that
// sum as training does (ZeRO 0 over a one-rank data-parallel group, the model's unit
// hooks starting it), and compares what the optimizer would update with, no sum done
// by the test, with the single-rank model's gradient.
#include <mpi.h>

#include <catch2/catch.hpp>
#include <cmath>

#include "mini5d/comm/communicator.hpp"
#include "mini5d/model/gpt.hpp"
#include "mini5d/parallel/dp/zero_optimizer.hpp"
#include "mini5d/train/zero_model.hpp"
#include "fd_harness.hpp"
#include "mpi_util.hpp"

using namespace mini5d;
using test::all_ranks;
using test::world_max;
using test::world_rank;

namespace {
using Model = model::Gpt<double>;
constexpr int kBatch = 2;

template <class M>
double loss_of(M& m, const test::Batch& b) {
  const double n = double(kBatch) * m.config().seq;
  return m.forward(b.in, b.tg, 1.0 / n) / n;
}
}  // namespace

TEST_CASE("t = 2: sharded gradients are slices of the single-rank gradients; finite differences agree",
          "[tp][mpi][gradients]") {
  REQUIRE(test::world_size() == 2);
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  comm::Communicator group(grid::CommHandle(dup), "tp", comm::Transport::staged);
  tp::TpComm tpc(group);
  const auto cfg = test::fd_model(12, 6, 16, 2);
  const test::Batch batch = test::fixed_batch(kBatch * cfg.seq, cfg.vocab);
  const std::uint64_t seed = 99;

  Model whole(cfg, kBatch);
  whole.init_params(seed);
  whole.zero_grads();
  const double want_loss = loss_of(whole, batch);
  whole.backward();
  auto whole_g = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), whole.grads);

  for (bool sp : {false, true}) {
    INFO("sp=" << sp);
    Model part(cfg, kBatch, Model::Owns::params_and_grads, {&tpc, sp, Recompute::none});
    part.init_params(seed);
    part.zero_grads();
    const double got_loss = loss_of(part, batch);
    part.backward();
    CHECK(world_max(std::abs(got_loss - want_loss)) < 1e-12);
    auto g = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), part.grads);
    // Replicated tensors hold partial sums with SP (each rank saw its own tokens): added
    // here to check the partials; the trainer's own sum is the fp32 case's.
    double worst_slice = 0;
    for (const auto& t : part.layout().tensors()) {
      auto mine = test::part_of(g, t);
      if (t.replicated && sp)
        MPI_Allreduce(MPI_IN_PLACE, mine.data(), int(mine.size()), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      const std::int64_t at = whole.layout().at(t.name).offset;
      worst_slice = test::worse(worst_slice, test::slice_difference(mine, t, whole_g, at));
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
      auto grad = test::part_of(g, t);
      if (t.replicated && sp)
        MPI_Allreduce(MPI_IN_PLACE, grad.data(), int(grad.size()), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      for (int owner = 0; owner < (t.replicated ? 1 : 2); ++owner) {
        for (int k = 0; k < 3; ++k) {
          const std::int64_t i = (std::int64_t(k) * 7919 + 3) % t.size();
          const bool mine = t.replicated || world_rank() == owner;
          // Every rank takes part in the loss; only the element's holders move it.
          auto put = [&](double x) {
            if (mine) params(t.offset + i) = x;
            Kokkos::deep_copy(part.params, params);
          };
          auto loss = [&] { return loss_of(part, batch); };
          const double fd = test::central_difference(params(t.offset + i), h, put, loss);
          double analytic = mine ? grad[std::size_t(i)] : 0.0;
          if (!t.replicated) MPI_Allreduce(MPI_IN_PLACE, &analytic, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
          worst_fd = test::worse(worst_fd, test::floored_relative(fd, analytic, 1e-2));
        }
      }
    }
    worst_fd = world_max(worst_fd);
    if (world_rank() == 0) std::printf("t=2 sp=%d: worst finite-difference error %.3g\n", sp, worst_fd);
    CHECK(worst_fd < 1e-6);
  }
  CHECK(all_ranks(true));
}

TEST_CASE("t = 2 with SP: the trainer's sum of replicated gradients gives the single-rank gradient (fp32)",
          "[tp][mpi][gradients]") {
  REQUIRE(test::world_size() == 2);
  MPI_Comm tp_dup, dp_self;
  MPI_Comm_dup(MPI_COMM_WORLD, &tp_dup);
  MPI_Comm_dup(MPI_COMM_SELF, &dp_self);
  comm::Communicator tp_group(grid::CommHandle(tp_dup), "tp", comm::Transport::staged);
  comm::Communicator dp_group(grid::CommHandle(dp_self), "dp", comm::Transport::staged);
  tp::TpComm tpc(tp_group);
  const auto cfg = test::fd_model(12, 6, 16, 2);
  const test::Batch batch = test::fixed_batch(kBatch * cfg.seq, cfg.vocab);
  const std::uint64_t seed = 99;

  model::Gpt<float> whole(cfg, kBatch);
  whole.init_params(seed);
  whole.zero_grads();
  loss_of(whole, batch);
  whole.backward();
  auto whole_g = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), whole.grads);

  model::Gpt<float> part(cfg, kBatch, train::model_ownership(0), {&tpc, true, Recompute::none});
  auto zero = dp::make_zero_optimizer<float>(train::zero_model(part), dp_group, 0, {}, seed, std::int64_t(1) << 62, &tpc);
  zero->begin_step();
  zero->begin_microbatch(true);
  loss_of(part, batch);
  part.backward();
  zero->finish_reductions();
  auto g = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), zero->reduced_grads());  // flat at ZeRO 0

  double worst_replicated = 0, worst_sharded = 0;
  int replicated = 0;
  for (const auto& t : part.layout().tensors()) {
    const double diff = test::slice_difference(test::part_of(g, t), t, whole_g, whole.layout().at(t.name).offset);
    (t.replicated ? worst_replicated : worst_sharded) = test::worse(t.replicated ? worst_replicated : worst_sharded, diff);
    replicated += t.replicated;
  }
  worst_replicated = world_max(worst_replicated);
  worst_sharded = world_max(worst_sharded);
  if (world_rank() == 0)
    std::printf("t=2 sp=1 fp32, trainer's sum: worst relative gradient difference %.3g over %d replicated tensors, "
                "%.3g over the sharded ones\n", worst_replicated, replicated, worst_sharded);
  CHECK(replicated > 0);
  // fp32 round-off of two partial sums against one sum; a partial left unsummed is off
  // by about half the gradient.
  CHECK(worst_replicated < 1e-4);
  CHECK(worst_sharded < 1e-4);
  CHECK(all_ranks(true));
}
