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
#include "mpi_util.hpp"

using namespace mini5d;
using test::world_max;
using test::world_rank;

namespace {
using Model = model::Gpt<double>;

ModelConfig small_model(int top_k) {
  ModelConfig m;
  m.vocab = 12;
  m.d_model = 8;
  m.layers = 2;
  m.heads = 2;
  m.seq = 6;
  m.ffn = 16;
  m.experts = 4;
  m.top_k = top_k;
  return m;
}

// Tokens of sequences [first, first + count) of a fixed two-sequence batch.
std::pair<Vec<int>, Vec<int>> batch(const ModelConfig& m, int first, int count) {
  const int n = count * m.seq;
  Vec<int> in("in", n), tg("tg", n);
  auto hi = Kokkos::create_mirror_view(in);
  auto ht = Kokkos::create_mirror_view(tg);
  for (int i = 0; i < n; ++i) {
    const int g = first * m.seq + i;
    hi(i) = (7 * g + 3) % m.vocab;
    ht(i) = (5 * g + 1) % m.vocab;
  }
  Kokkos::deep_copy(in, hi);
  Kokkos::deep_copy(tg, ht);
  return {in, tg};
}

// The logical (row-major) index of each element of this rank's part of tensor t.
std::vector<std::int64_t> logical_indices(const model::TensorSpec& t) {
  std::vector<ShardBlock> blocks;
  model::append_part_blocks(t, 0, t.size(), 0, blocks);
  std::vector<std::int64_t> out(std::size_t(t.size()));
  for (const auto& b : blocks) {
    std::vector<std::int64_t> stride(t.global_shape.size(), 1);
    for (int d = int(stride.size()) - 2; d >= 0; --d) stride[d] = stride[d + 1] * t.global_shape[d + 1];
    for (std::int64_t i = 0; i < b.size(); ++i) {
      std::int64_t rest = i, logical = 0;
      for (int d = int(b.extent.size()) - 1; d >= 0; --d) {
        logical += (b.offset[d] + rest % b.extent[d]) * stride[d];
        rest /= b.extent[d];
      }
      out[std::size_t(b.local_offset + i)] = logical;
    }
  }
  return out;
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
    const auto [win, wtg] = batch(cfg, 0, 2);
    const double want_ce = whole.forward(win, wtg, scale), want_aux = whole.last_aux_loss();
    whole.backward();
    auto wg = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), whole.grads);

    model::ModelParallel par;
    par.ep = &epc;
    par.aux_loss_coef = coef;
    Model part(cfg, 1, Model::Owns::params_and_grads, par);
    part.init_params(seed);
    part.zero_grads();
    const auto [pin, ptg] = batch(cfg, world_rank(), 1);
    double got[2] = {part.forward(pin, ptg, scale), part.last_aux_loss()};
    part.backward();
    MPI_Allreduce(MPI_IN_PLACE, got, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    CHECK(std::abs(got[0] - want_ce) / want_ce < 1e-12);
    CHECK(std::abs(got[1] - want_aux) / want_aux < 1e-12);
    auto pg = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), part.grads);
    double worst = 0;
    int experts = 0;
    for (const auto& t : part.layout().tensors()) {
      const auto& w = whole.layout().at(t.name);
      std::vector<double> mine(std::size_t(t.size()));
      for (std::int64_t i = 0; i < t.size(); ++i) mine[std::size_t(i)] = pg(t.offset + i);
      if (!t.expert)
        MPI_Allreduce(MPI_IN_PLACE, mine.data(), int(mine.size()), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      else
        ++experts;
      const auto idx = logical_indices(t);
      for (std::int64_t i = 0; i < t.size(); ++i) {
        const double ref = wg(w.offset + idx[std::size_t(i)]);
        worst = std::max(worst, std::abs(mine[std::size_t(i)] - ref) / std::max(1e-3, std::abs(ref)));
      }
    }
    worst = world_max(worst);
    if (world_rank() == 0) std::printf("e=2 top-%d: worst relative gradient difference %.3g\n", top_k, worst);
    CHECK(worst < 1e-10);
    CHECK(experts == 8);
  }
}
