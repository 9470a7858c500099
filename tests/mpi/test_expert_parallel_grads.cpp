// SPDX-License-Identifier: BSD-3-Clause
// Expert parallelism in fp64 under mpiexec -n 2 (e = 2), on a model small enough for
// the single-rank gradients to be checked by finite differences (test_moe): each rank
// runs one of the two sequences of the batch with half of the experts, exchanging
// tokens with the other; then
//   the summed token loss and the aux loss over the ranks equal the single-rank ones,
//   every rank's expert gradients equal the slice of the single-rank gradients for
//   its experts (the tokens of both ranks reached them), and the dense gradients
//   (router included) summed over the ranks equal the single-rank ones,
// at top-1 and top-2.
#include <mpi.h>

#include <catch2/catch.hpp>
#include <cmath>

#include "mini5d/comm/communicator.hpp"
#include "mini5d/model/gpt.hpp"
#include "fd_harness.hpp"
#include "mpi_util.hpp"

using namespace mini5d;
using test::world_max;
using test::world_rank;

namespace {
using Model = model::Gpt<double>;

ModelConfig small_model(int top_k) {
  ModelConfig m = test::fd_model(12, 6, 16, 2);
  m.experts = 4;
  m.top_k = top_k;
  return m;
}

// Tokens of sequences [first, first + count) of a fixed two-sequence batch.
test::Batch batch(const ModelConfig& m, int first, int count) {
  return test::fixed_batch(count * m.seq, m.vocab, first * m.seq);
}
}  // namespace

TEST_CASE("e = 2: expert gradients are slices of the single-rank ones, dense gradients sum to them",
          "[ep][mpi][gradients]") {
  REQUIRE(test::world_size() == 2);
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  comm::Communicator group(grid::CommHandle(dup), "ep", comm::Transport::staged);
  ep::EpComm epc(group);
  for (int top_k : {1, 2}) {
    INFO("top_k " << top_k);
    const auto cfg = small_model(top_k);
    const double scale = 1.0 / (2.0 * cfg.seq), coef = 0.3;
    const std::uint64_t seed = 5;
    model::ModelParallel single;
    single.aux_loss_coef = coef;
    Model whole(cfg, 2, Model::Owns::params_and_grads, single);
    whole.init_params(seed);
    whole.zero_grads();
    const test::Batch wb = batch(cfg, 0, 2);
    const double want_ce = whole.forward(wb.in, wb.tg, scale), want_aux = whole.last_aux_loss();
    whole.backward();
    auto wg = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), whole.grads);

    model::ModelParallel par;
    par.ep = &epc;
    par.aux_loss_coef = coef;
    Model part(cfg, 1, Model::Owns::params_and_grads, par);
    part.init_params(seed);
    part.zero_grads();
    const test::Batch pb = batch(cfg, world_rank(), 1);
    double got[2] = {part.forward(pb.in, pb.tg, scale), part.last_aux_loss()};
    part.backward();
    MPI_Allreduce(MPI_IN_PLACE, got, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    CHECK(std::abs(got[0] - want_ce) / want_ce < 1e-12);
    CHECK(std::abs(got[1] - want_aux) / want_aux < 1e-12);
    auto pg = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), part.grads);
    double worst = 0;
    int experts = 0;
    for (const auto& t : part.layout().tensors()) {
      auto mine = test::part_of(pg, t);
      if (!t.expert)
        MPI_Allreduce(MPI_IN_PLACE, mine.data(), int(mine.size()), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      else
        ++experts;
      worst = test::worse(worst, test::slice_difference(mine, t, wg, whole.layout().at(t.name).offset));
    }
    worst = world_max(worst);
    if (world_rank() == 0) std::printf("e=2 top-%d: worst relative gradient difference %.3g\n", top_k, worst);
    CHECK(worst < 1e-10);
    CHECK(experts == 8);
  }
}
