// SPDX-License-Identifier: BSD-3-Clause
// Ring attention in fp64 under mpiexec -n 4, against single-rank causal attention
// (kernels/attention.hpp, itself checked against finite differences in
// test_kernel_gradients): the same q, k, v and dy of a [B*H, T, hd] problem on every
// rank; each rank of a c ring takes its rows (zig-zag, or the contiguous test split)
// and runs the ring; its output y and its gradients dq, dk, dv must equal the rows of
// the single-rank ones at the same global positions. For c = 1 (the recurrence alone,
// a ring of one), 2 (two rings of two) and 4, with c = 2 and 4 contiguous, and c = 1
// and 4 with the products on the team path (the GPU's one launch, forced here). Also:
// the blocks each rank computes equal Split::blocks (zig-zag equal on every rank,
// contiguous not), and the cp bytes of one forward and backward are the analytic
// (c-1) K/V blocks forward and (c-1) K/V + (c-1) dK/dV blocks backward. And the whole
// model in fp64 at c = 2 and 4 (and c2 x t2): the loss summed over the ring, and every
// gradient summed over the ring, equal the single-rank model's (positions, the token
// split, the ring and the per-token layers together).
#include <mpi.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "mini5d/comm/accounts.hpp"
#include "mini5d/comm/communicator.hpp"
#include "mini5d/kernels/attention.hpp"
#include "mini5d/kernels/batched_gemm.hpp"
#include "mini5d/model/gpt.hpp"
#include "mini5d/parallel/cp/ring_attention.hpp"
#include "fd_harness.hpp"
#include "mpi_util.hpp"

using namespace mini5d;
using test::Group;
using test::world_max;
using test::world_rank;

namespace {
using T3 = Ten3<double>;
using H3 = Kokkos::View<double***, Kokkos::LayoutRight, Kokkos::HostSpace>;
constexpr int kBH = 3, kSeq = 16, kHd = 4;  // 3 (batch, head) matrices, T = 16

// Deterministic values in [-1, 1) from (tensor, index).
double value(int tensor, std::int64_t i) {
  std::uint64_t x = std::uint64_t(i) * 0x9E3779B97F4A7C15ull + std::uint64_t(tensor) * 0xBF58476D1CE4E5B9ull;
  x ^= x >> 31;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 29;
  return double(x % 2000003) / 1000001.5 - 1.0;
}
T3 filled(int tensor, int rows) {
  T3 t("t", kBH, rows, kHd);
  auto h = Kokkos::create_mirror_view(t);
  for (std::int64_t i = 0; i < std::int64_t(h.size()); ++i) h.data()[i] = 1.5 * value(tensor, i);
  Kokkos::deep_copy(t, h);
  return t;
}
// This rank's rows of a whole [B*H, T, hd] tensor, in local order.
T3 local_rows(const T3& whole, const kernels::Positions& pos) {
  auto w = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), whole);
  T3 out("local", kBH, pos.local_seq, kHd);
  auto h = Kokkos::create_mirror_view(out);
  for (int b = 0; b < kBH; ++b)
    for (int r = 0; r < pos.local_seq; ++r)
      for (int d = 0; d < kHd; ++d) h(b, r, d) = w(b, pos.global(r), d);
  Kokkos::deep_copy(out, h);
  return out;
}
// Worst |got - want| / max(|want|, 1e-3) over this rank's rows.
double worst(const T3& got_local, const T3& want_whole, const kernels::Positions& pos) {
  auto g = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), got_local);
  auto w = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), want_whole);
  double e = 0;
  for (int b = 0; b < kBH; ++b)
    for (int r = 0; r < pos.local_seq; ++r)
      for (int d = 0; d < kHd; ++d) {
        const double want = w(b, pos.global(r), d);
        e = test::worse(e, test::floored_relative(g(b, r, d), want, 1e-3));
      }
  return e;
}

struct Reference {
  T3 q = filled(1, kSeq), k = filled(2, kSeq), v = filled(3, kSeq), dy = filled(4, kSeq);
  T3 y{"y", kBH, kSeq, kHd}, dq{"dq", kBH, kSeq, kHd}, dk{"dk", kBH, kSeq, kHd}, dv{"dv", kBH, kSeq, kHd};
  Reference() {
    T3 p("p", kBH, kSeq, kSeq), dp("dp", kBH, kSeq, kSeq);
    kernels::attention_forward<double>(y, p, q, k, v);
    kernels::attention_backward<double>(dq, dk, dv, dp, dy, p, q, k, v);
  }
};

struct Result {
  double y = 0, dq = 0, dk = 0, dv = 0;
  long forward_blocks = 0;
  double bytes = 0;
};

// One ring of c ranks (groups of c consecutive world ranks), every group at once.
Result run_ring(const Reference& ref, int c, bool zigzag) {
  Group g(c);
  MPI_Comm dup;
  MPI_Comm_dup(g.comm, &dup);
  comm::Communicator ring_comm(grid::CommHandle(dup), "cp", comm::Transport::staged);
  cp::CpComm ring(ring_comm);
  cp::Split split{c, zigzag};
  const auto pos = split.positions(ring.rank(), kSeq);
  cp::RingAttention<double> att(ring, split, kBH, pos.local_seq, kHd);
  const T3 q = local_rows(ref.q, pos), k = local_rows(ref.k, pos), v = local_rows(ref.v, pos);
  const T3 dy = local_rows(ref.dy, pos);
  T3 y("y", kBH, pos.local_seq, kHd), dq("dq", kBH, pos.local_seq, kHd), dk("dk", kBH, pos.local_seq, kHd),
      dv("dv", kBH, pos.local_seq, kHd);
  Mat<double> lse("lse", kBH, pos.local_seq);
  comm::accounts().clear();
  att.forward(y, lse, q, k, v);
  att.backward(dq, dk, dv, dy, y, lse, q, k, v);
  Result r;
  r.y = worst(y, ref.y, pos);
  r.dq = worst(dq, ref.dq, pos);
  r.dk = worst(dk, ref.dk, pos);
  r.dv = worst(dv, ref.dv, pos);
  r.forward_blocks = att.stats().forward_blocks;
  r.bytes = comm::accounts().bytes("cp", comm::Traffic::activations);
  return r;
}
}  // namespace

TEST_CASE("ring attention equals single-rank causal attention in fp64, forward and backward", "[cp][mpi][gradients]") {
  REQUIRE(test::world_size() == 4);
  const Reference ref;
  struct Case {
    int c;
    bool zigzag;
    bool teams = false;
  };
  // c = 1 and 4 again with the blocks' products on the team path (the one launch a
  // GPU takes; kernels/batched_gemm.hpp), forced on this host.
  for (const Case cs : {Case{1, true}, Case{2, true}, Case{4, true}, Case{2, false}, Case{4, false},
                        Case{1, true, true}, Case{4, true, true}}) {
    const kernels::ScopedGemmPath path(cs.teams ? kernels::GemmPath::teams : kernels::GemmPath::automatic);
    const Result r = run_ring(ref, cs.c, cs.zigzag);
    const double e = world_max(test::worst_of({r.y, r.dq, r.dk, r.dv}));
    INFO("c=" << cs.c << (cs.zigzag ? " zigzag" : " contiguous") << (cs.teams ? " teams" : "") << ": y " << r.y
              << ", dq " << r.dq << ", dk " << r.dk << ", dv " << r.dv);
    CHECK(e < 1e-12);
    if (world_rank() == 0)
      std::printf("ring attention c=%d %s%s: worst relative difference y/dq/dk/dv %.3g (bound 1e-12)\n", cs.c,
                  cs.zigzag ? "zigzag" : "contiguous", cs.teams ? " (team-path products)" : "", e);
  }
}

TEST_CASE("zig-zag balances the blocks; contiguous shows the imbalance; cp bytes are the analytic blocks",
          "[cp][mpi][balance][bytes]") {
  const Reference ref;
  for (int c : {2, 4})
    for (bool zigzag : {true, false}) {
      const Result r = run_ring(ref, c, zigzag);
      const cp::Split split{c, zigzag};
      const int me = world_rank() % c;
      // Counted blocks equal the analytic count, and every zig-zag rank has 2c + 1.
      CHECK(world_max(std::abs(double(r.forward_blocks - split.blocks(me)))) == 0);
      double most = double(r.forward_blocks), least = double(r.forward_blocks);
      MPI_Allreduce(MPI_IN_PLACE, &most, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      MPI_Allreduce(MPI_IN_PLACE, &least, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
      if (zigzag) {
        CHECK(most == 2 * c + 1);
        CHECK(least == 2 * c + 1);
        CHECK(split.imbalance() == 0);
      } else {
        // Contiguous: rank i computes 4i + 3 blocks, the mean is 2c + 1.
        CHECK(least == 3);
        CHECK(most == 4 * c - 1);
        CHECK(split.imbalance() == Approx(double(4 * c - 1) / (2 * c + 1) - 1));
      }
      // One block: K and V of this rank's T/c rows of B*H heads; (c-1) shifts forward,
      // (c-1) K/V and (c-1) dK/dV shifts backward.
      const double block = 2.0 * kBH * (kSeq / c) * kHd * sizeof(double);
      CHECK(world_max(std::abs(r.bytes - 3 * (c - 1) * block)) == 0);
      if (world_rank() == 0)
        std::printf("c=%d %s: blocks per rank %g..%g (imbalance %.1f%%), cp bytes %.0f\n", c,
                    zigzag ? "zigzag" : "contiguous", least, most, 100 * split.imbalance(), r.bytes);
    }
}

TEST_CASE("the whole model in fp64: loss and gradients summed over the ring equal one rank's", "[cp][mpi][gradients]") {
  constexpr int kBatch = 2;
  const auto cfg = test::fd_model(12, 16, 16, 2);
  const int n = kBatch * cfg.seq;
  const test::HostTokens tokens = test::fixed_tokens(n, cfg.vocab);
  const double scale = 1.0 / n;
  model::Gpt<double> whole(cfg, kBatch);
  whole.init_params(5);
  whole.zero_grads();
  const double want_loss = whole.forward(test::to_device(tokens.in), test::to_device(tokens.tg), scale);
  whole.backward();
  auto want = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), whole.grads);
  struct Case {
    int c, t;
  };
  for (const Case cs : {Case{2, 1}, Case{4, 1}, Case{2, 2}}) {
    // Ranks [c, t] in groups of c*t, t fastest as in the grid.
    Group g(cs.c * cs.t);
    int r = 0;
    MPI_Comm_rank(g.comm, &r);
    MPI_Comm ring_mpi, tensor_mpi;
    MPI_Comm_split(g.comm, r % cs.t, r, &ring_mpi);
    MPI_Comm_split(g.comm, r / cs.t, r, &tensor_mpi);
    comm::Communicator ring_comm(grid::CommHandle(ring_mpi), "cp", comm::Transport::staged);
    comm::Communicator tensor_comm(grid::CommHandle(tensor_mpi), "tp", comm::Transport::staged);
    cp::CpComm ring(ring_comm);
    tp::TpComm tpc(tensor_comm);
    model::ModelParallel par{&tpc, true, Recompute::none};
    par.cp = &ring;
    model::Gpt<double> part(cfg, kBatch, model::Gpt<double>::Owns::params_and_grads, par);
    part.init_params(5);
    part.zero_grads();
    std::vector<int> lin, ltg;
    cp::take_local(tokens.in, kBatch, cfg.seq, part.dims().pos, lin);
    cp::take_local(tokens.tg, kBatch, cfg.seq, part.dims().pos, ltg);
    double loss = part.forward(test::to_device(lin), test::to_device(ltg), scale);
    part.backward();
    MPI_Allreduce(MPI_IN_PLACE, &loss, 1, MPI_DOUBLE, MPI_SUM, ring_mpi);
    // Every rank's gradient of its part, summed over the ring (each ring rank saw its
    // own tokens), is the slice of the single-rank gradient; tensors replicated over t
    // hold partial sums over the t group's token rows (sequence parallelism).
    auto got = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), part.grads);
    double worst_g = 0;
    for (const auto& ts : part.layout().tensors()) {
      auto mine = test::part_of(got, ts);
      MPI_Allreduce(MPI_IN_PLACE, mine.data(), int(mine.size()), MPI_DOUBLE, MPI_SUM, ring_mpi);
      if (ts.replicated && cs.t > 1)
        MPI_Allreduce(MPI_IN_PLACE, mine.data(), int(mine.size()), MPI_DOUBLE, MPI_SUM, tensor_mpi);
      worst_g = test::worse(worst_g, test::slice_difference(mine, ts, want, whole.layout().at(ts.name).offset));
    }
    const double worst_loss = world_max(std::abs(loss - want_loss) / want_loss);
    worst_g = world_max(worst_g);
    INFO("c=" << cs.c << " t=" << cs.t << ": loss " << worst_loss << ", gradients " << worst_g);
    CHECK(worst_loss < 1e-12);
    CHECK(worst_g < 1e-10);
    if (world_rank() == 0)
      std::printf("fp64 model c=%d t=%d: loss %.15g (one rank %.15g, relative %.3g), worst gradient %.3g relative\n",
                  cs.c, cs.t, loss, want_loss, worst_loss, worst_g);
  }
}
