// SPDX-License-Identifier: BSD-3-Clause
// The communication layer under mpiexec -n 3 (an odd size, so parts are uneven):
// every operation gives the right values, blocking and non-blocking, and is accounted
// on its axis with the documented payload bytes and one call each; the same again with
// every buffer staged through the communicator's host buffers (the path device memory
// takes without GPU-aware MPI), and those buffers allocated once, not per call.
#include <mpi.h>

#include <catch2/catch.hpp>
#include <numeric>

#include "mini5d/comm/communicator.hpp"
#include "mini5d/core/memory_ledger.hpp"
#include "mpi_util.hpp"

using namespace mini5d;
using test::all_ranks;
using comm::Traffic;

namespace {
struct World {
  comm::Communicator c;
  explicit World(comm::Transport t = comm::Transport::staged) : c(dup(), "test", t) {}
  static grid::CommHandle dup() {
    MPI_Comm d;
    MPI_Comm_dup(MPI_COMM_WORLD, &d);
    return grid::CommHandle(d);
  }
};
Vec<float> filled(int n, float base) {
  Vec<float> v("mini5d::test::buf", n);
  auto h = Kokkos::create_mirror_view(v);
  for (int i = 0; i < n; ++i) h(i) = base + float(i);
  Kokkos::deep_copy(v, h);
  return v;
}
float at(const Vec<float>& v, int i) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  return h(i);
}
const comm::OpStats& stats(Traffic t) {
  return comm::accounts().axes().at("test").by_traffic.at(comm::to_string(t));
}
}  // namespace

TEST_CASE("collectives on Views: values and accounting", "[comm][mpi]") {
  const auto transport = GENERATE(comm::Transport::staged, comm::Transport::always_staged);
  World w(transport);
  const int r = w.c.rank(), n = w.c.size();
  REQUIRE(n == 3);
  comm::accounts().clear();
  bool ok = true;

  // allreduce and its non-blocking form: sum of (rank + i) = n*i + n(n-1)/2.
  auto a = filled(5, float(r));
  w.c.allreduce<float>(a, Traffic::grads);
  auto b = filled(5, float(r));
  auto req = w.c.iallreduce<float>(b, Traffic::grads);
  while (!req.test()) {
  }
  for (int i = 0; i < 5; ++i) ok = ok && at(a, i) == float(n * i + 3) && at(b, i) == float(n * i + 3);
  CHECK(stats(Traffic::grads).calls == 2);
  CHECK(stats(Traffic::grads).bytes == 2 * 5 * 4);

  // reduce_scatter with uneven counts {3, 2, 2}: rank r gets its part of the sum.
  const std::vector<int> counts = {3, 2, 2}, displs = {0, 3, 5};
  auto s = filled(7, float(r));
  Vec<float> part("mini5d::test::part", counts[r]);
  w.c.reduce_scatter<float>(s, part, counts, Traffic::weights);
  for (int i = 0; i < counts[r]; ++i) ok = ok && at(part, i) == float(n * (displs[r] + i) + 3);
  Vec<float> part2("mini5d::test::part2", counts[r]);
  w.c.ireduce_scatter<float>(s, part2, counts, Traffic::weights).wait();
  for (int i = 0; i < counts[r]; ++i) ok = ok && at(part2, i) == at(part, i);
  CHECK(stats(Traffic::weights).bytes == 2 * 7 * 4);

  // allgatherv in place: rank r fills its part with r, everyone gets every part.
  Vec<float> g("mini5d::test::gather", 7);
  Kokkos::deep_copy(Kokkos::subview(g, std::make_pair(displs[r], displs[r] + counts[r])), float(r + 1));
  w.c.allgatherv<float>(g, counts, displs, Traffic::activations);
  Vec<float> g2("mini5d::test::gather2", 7);
  Kokkos::deep_copy(Kokkos::subview(g2, std::make_pair(displs[r], displs[r] + counts[r])), float(r + 1));
  w.c.iallgatherv<float>(g2, counts, displs, Traffic::activations).wait();
  for (int q = 0; q < n; ++q)
    for (int i = displs[q]; i < displs[q] + counts[q]; ++i) ok = ok && at(g, i) == float(q + 1) && at(g2, i) == float(q + 1);
  CHECK(stats(Traffic::activations).bytes == 2 * 7 * 4);
  CHECK(stats(Traffic::activations).calls == 2);

  // alltoallv: rank r sends (q + 1) elements of value 10r + q to rank q.
  std::vector<int> sc(n), sd(n), rc(n), rd(n);
  for (int q = 0; q < n; ++q) sc[q] = q + 1, rc[q] = r + 1;
  std::partial_sum(sc.begin(), sc.end() - 1, sd.begin() + 1);
  std::partial_sum(rc.begin(), rc.end() - 1, rd.begin() + 1);
  Vec<float> snd("mini5d::test::a2a_send", 6), rcv("mini5d::test::a2a_recv", 3 * (r + 1));
  for (int q = 0; q < n; ++q)
    Kokkos::deep_copy(Kokkos::subview(snd, std::make_pair(sd[q], sd[q] + sc[q])), float(10 * r + q));
  w.c.alltoallv<float>(snd, sc, sd, rcv, rc, rd, Traffic::scalars);
  for (int q = 0; q < n; ++q)
    for (int i = rd[q]; i < rd[q] + rc[q]; ++i) ok = ok && at(rcv, i) == float(10 * q + r);
  CHECK(stats(Traffic::scalars).bytes == 6 * 4);

  // send/recv around the ring, blocking and not.
  const int next = (r + 1) % n, prev = (r + n - 1) % n;
  auto msg = filled(4, float(100 * r));
  Vec<float> got("mini5d::test::got", 4), got2("mini5d::test::got2", 4);
  auto rq = w.c.irecv<float>(got, prev, 7, Traffic::activations);
  auto sq = w.c.isend<float>(msg, next, 7, Traffic::activations);
  rq.wait();
  sq.wait();
  if (r % 2 == 0) {
    w.c.send<float>(msg, next, 8, Traffic::activations);
    w.c.recv<float>(got2, prev, 8, Traffic::activations);
  } else {
    w.c.recv<float>(got2, prev, 8, Traffic::activations);
    w.c.send<float>(msg, next, 8, Traffic::activations);
  }
  for (int i = 0; i < 4; ++i) ok = ok && at(got, i) == float(100 * prev + i) && at(got2, i) == float(100 * prev + i);
  CHECK(stats(Traffic::activations).calls == 2 + 4);
  CHECK(stats(Traffic::activations).bytes == 2 * 7 * 4 + 4 * 4 * 4);

  // Host scalars.
  double x[2] = {1.0, double(r)};
  w.c.allreduce_host(x, 2);
  ok = ok && x[0] == 3.0 && x[1] == 3.0;

  // Time: every call was accounted with an exposed part no larger than its wall time.
  const auto& total = comm::accounts().axes().at("test").total;
  CHECK(total.exposed <= total.seconds + 1e-12);
  CHECK(all_ranks(ok));
  // Host memory goes to MPI as it is; staged, at most two buffers (send and receive).
  if (transport == comm::Transport::staged) CHECK(w.c.staging().buffers() == 0);
  if (transport == comm::Transport::always_staged) CHECK(w.c.staging().buffers() == 2);
}

TEST_CASE("staging buffers are allocated once and reused across calls", "[comm][mpi]") {
  const auto& ledger = mem::ledger();
  const auto before = ledger.of(mem::Category::comm_buffers).current;
  bool ok = true;
  {
    World w(comm::Transport::always_staged);
    const int r = w.c.rank(), n = w.c.size();
    const std::int64_t bytes = 1000 * sizeof(float);
    auto charged = [&] { return ledger.of(mem::Category::comm_buffers).current - before; };
    // 50 blocking all-reduces of one size: one buffer, allocated by the first call.
    for (int k = 0; k < 50; ++k) {
      auto a = filled(1000, float(r));
      w.c.allreduce<float>(a, Traffic::grads);
      ok = ok && at(a, 999) == float(n * 999 + 3);
      if (k == 0) CHECK(charged() == bytes);
    }
    CHECK(w.c.staging().allocations() == 1);
    CHECK(w.c.staging().buffers() == 1);
    CHECK(charged() == bytes);
    // Smaller calls, and non-blocking ones one at a time, reuse it.
    for (int k = 0; k < 50; ++k) {
      auto a = filled(10 + k, float(r));
      w.c.iallreduce<float>(a, Traffic::grads).wait();
      ok = ok && at(a, 9) == float(n * 9 + 3);
    }
    CHECK(w.c.staging().allocations() == 1);
    CHECK(charged() == bytes);
    // Two in flight need two buffers; they stay for the next pair.
    for (int k = 0; k < 20; ++k) {
      auto a = filled(1000, float(r)), b = filled(1000, float(r));
      auto qa = w.c.iallreduce<float>(a, Traffic::grads);
      auto qb = w.c.iallreduce<float>(b, Traffic::grads);
      qb.wait();
      qa.wait();
      ok = ok && at(a, 1) == float(n + 3) && at(b, 2) == float(2 * n + 3);
    }
    CHECK(w.c.staging().buffers() == 2);
    CHECK(w.c.staging().allocations() == 2);
    CHECK(charged() == 2 * bytes);
    // A larger call grows one buffer (once), and the ledger follows.
    for (int k = 0; k < 10; ++k) {
      auto a = filled(3000, float(r));
      w.c.allreduce<float>(a, Traffic::grads);
      ok = ok && at(a, 2999) == float(n * 2999 + 3);
    }
    CHECK(w.c.staging().allocations() == 3);
    CHECK(charged() == bytes + 3 * bytes);
  }
  // The communicator gone, its buffers are given back.
  CHECK(ledger.of(mem::Category::comm_buffers).current == before);
  CHECK(all_ranks(ok));
}

TEST_CASE("a request destroyed before completion waits instead of leaking", "[comm][mpi]") {
  World w;
  auto v = filled(3, 1.0f);
  {
    auto req = w.c.iallreduce<float>(v, Traffic::grads);
  }
  CHECK(all_ranks(at(v, 0) == 3.0f));
}
