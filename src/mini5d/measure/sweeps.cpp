// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/measure/sweeps.hpp"

#include <KokkosBlas3_gemm.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "mini5d/kernels/views.hpp"

namespace mini5d::measure {

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Runs f once as a trial (a warm-up too), agrees over comm on a repetition count that
// fills min_seconds on the slowest rank (3..max_reps), then times that many calls, all
// ranks starting together. f must leave nothing pending (fence or blocking MPI).
// `between` runs untimed before each timed call (e.g. to evict the caches).
template <class F, class G>
double timed_median(MPI_Comm comm, double min_seconds, int max_reps, F&& f, G&& between) {
  MPI_Barrier(comm);
  between();
  Kokkos::Timer trial;
  f();
  double slowest = trial.seconds();
  MPI_Allreduce(MPI_IN_PLACE, &slowest, 1, MPI_DOUBLE, MPI_MAX, comm);
  const int reps = std::clamp(int(min_seconds / std::max(slowest, 1e-9)), 3, max_reps);
  std::vector<double> t(std::size_t(reps), 0.0);
  MPI_Barrier(comm);
  for (int i = 0; i < reps; ++i) {
    between();
    Kokkos::Timer one;
    f();
    t[std::size_t(i)] = one.seconds();
  }
  return median(t);
}

template <class F>
double timed_median(MPI_Comm comm, double min_seconds, int max_reps, F&& f) {
  return timed_median(comm, min_seconds, max_reps, f, [] {});
}

// The device kernels sit in named functions, so that what timed_median runs is plain
// host code (and no extended lambda is nested in another lambda's body).
void one_element_kernel(Vec<float> x) {
  Kokkos::parallel_for(
      "mini5d::calibrate::launch", Range(0, 1), KOKKOS_LAMBDA(const std::int64_t i) { x(i) += 1.0f; });
  fence("mini5d::calibrate::launch");
}

void touch(Vec<float> x) {
  Kokkos::parallel_for(
      "mini5d::calibrate::evict", Range(0, std::int64_t(x.extent(0))),
      KOKKOS_LAMBDA(const std::int64_t i) { x(i) += 1.0f; });
  fence("mini5d::calibrate::evict");
}

void triad(Vec<float> a, Vec<float> b, Vec<float> d) {
  Kokkos::parallel_for(
      "mini5d::calibrate::triad", Range(0, std::int64_t(a.extent(0))),
      KOKKOS_LAMBDA(const std::int64_t i) { a(i) = b(i) + 0.5f * d(i); });
  fence("mini5d::calibrate::triad");
}

}  // namespace

GemmTimer::GemmTimer(MPI_Comm comm) : comm_(comm), evict_("mini5d::calibrate::evict", std::int64_t(2) << 20) {}

double GemmTimer::seconds(const plan::GemmCall& c, double min_seconds) const {
  const int m = int(c.m), n = int(c.n), k = int(c.k);
  Mat<float> a("mini5d::calibrate::a", c.ta == 'N' ? m : k, c.ta == 'N' ? k : m);
  Mat<float> b("mini5d::calibrate::b", c.tb == 'N' ? k : n, c.tb == 'N' ? n : k);
  Mat<float> y("mini5d::calibrate::y", m, n);
  Kokkos::deep_copy(a, 0.01f);
  Kokkos::deep_copy(b, 0.02f);
  const char ta[2] = {c.ta, 0}, tb[2] = {c.tb, 0};
  return timed_median(
      comm_, min_seconds, 400,
      [&] {
        KokkosBlas::gemm(ta, tb, 1.0f, a, b, 0.0f, y);
        fence("mini5d::calibrate::gemm");
      },
      [&] { touch(evict_); });
}

double time_launch(MPI_Comm comm) {
  Vec<float> x("mini5d::calibrate::launch", 1);
  return timed_median(comm, 0.02, 5000, [&] { one_element_kernel(x); });
}

double triad_bandwidth(MPI_Comm comm, double bytes) {
  const std::int64_t n = std::max<std::int64_t>(1, std::int64_t(bytes / sizeof(float)));
  Vec<float> a("mini5d::calibrate::ta", n), b("mini5d::calibrate::tb", n), d("mini5d::calibrate::tc", n);
  Kokkos::deep_copy(b, 1.0f);
  Kokkos::deep_copy(d, 2.0f);
  const double s = timed_median(comm, 0.1, 200, [&] { triad(a, b, d); });
  return 3.0 * sizeof(float) * double(n) / s;
}

const char* collective_name(Collective c) {
  switch (c) {
    case Collective::allreduce: return "all-reduce";
    case Collective::allgather: return "all-gather";
    case Collective::reduce_scatter: return "reduce-scatter";
    case Collective::sendrecv: return "send/recv";
  }
  return "?";
}

double time_collective(MPI_Comm comm, Collective c, double bytes, double min_seconds) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  // Whole buffers divisible by the group, as the runtime's equal parts are.
  const int part = std::max(1, int(bytes / sizeof(float)) / size), whole = part * size;
  std::vector<float> send(std::size_t(whole), 1.0f), recv(std::size_t(whole), 0.0f);
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  return timed_median(comm, min_seconds, 200, [&] {
    switch (c) {
      case Collective::allreduce:
        MPI_Allreduce(MPI_IN_PLACE, send.data(), whole, MPI_FLOAT, MPI_SUM, comm);
        break;
      case Collective::allgather:
        MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv.data(), part, MPI_FLOAT, comm);
        break;
      case Collective::reduce_scatter:
        MPI_Reduce_scatter_block(send.data(), recv.data(), part, MPI_FLOAT, MPI_SUM, comm);
        break;
      case Collective::sendrecv:
        MPI_Sendrecv(send.data(), whole, MPI_FLOAT, next, 7, recv.data(), whole, MPI_FLOAT, prev, 7, comm,
                     MPI_STATUS_IGNORE);
        break;
    }
  });
}

double overlap_efficiency(MPI_Comm comm, double bytes) {
  const int n = std::max(1, int(bytes / sizeof(float)));
  std::vector<float> buf(std::size_t(n), 1.0f);
  const int m = 256;
  Mat<float> a("mini5d::calibrate::oa", m, m), b("mini5d::calibrate::ob", m, m), y("mini5d::calibrate::oy", m, m);
  Kokkos::deep_copy(a, 0.01f);
  Kokkos::deep_copy(b, 0.02f);
  auto product = [&] {
    KokkosBlas::gemm("N", "T", 1.0f, a, b, 0.0f, y);
    fence("mini5d::calibrate::overlap_gemm");
  };
  const double t_m = timed_median(comm, 0.05, 100, [&] {
    MPI_Allreduce(MPI_IN_PLACE, buf.data(), n, MPI_FLOAT, MPI_SUM, comm);
  });
  const double t_one = timed_median(comm, 0.02, 200, product);
  // As many products as the all-reduce lasts (agreed: the slowest rank's count).
  int k = std::clamp(int(t_m / std::max(t_one, 1e-9)), 1, 100000);
  MPI_Allreduce(MPI_IN_PLACE, &k, 1, MPI_INT, MPI_MAX, comm);
  const double t_c = timed_median(comm, 0.05, 50, [&] {
    for (int i = 0; i < k; ++i) product();
  });
  const double t_b = timed_median(comm, 0.05, 50, [&] {
    MPI_Request req;
    MPI_Iallreduce(MPI_IN_PLACE, buf.data(), n, MPI_FLOAT, MPI_SUM, comm, &req);
    int done = 0;
    for (int i = 0; i < k; ++i) {
      product();
      if (!done) MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    }
    MPI_Wait(&req, MPI_STATUS_IGNORE);
  });
  double eff = std::clamp((t_c + t_m - t_b) / std::max(std::min(t_c, t_m), 1e-12), 0.0, 1.0);
  // One figure for all ranks: the mean.
  MPI_Allreduce(MPI_IN_PLACE, &eff, 1, MPI_DOUBLE, MPI_SUM, comm);
  int size = 1;
  MPI_Comm_size(comm, &size);
  return eff / size;
}

OverRanks over_ranks(MPI_Comm comm, double mine) {
  int size = 1;
  MPI_Comm_size(comm, &size);
  OverRanks r;
  MPI_Allreduce(&mine, &r.mean, 1, MPI_DOUBLE, MPI_SUM, comm);
  MPI_Allreduce(&mine, &r.min, 1, MPI_DOUBLE, MPI_MIN, comm);
  MPI_Allreduce(&mine, &r.max, 1, MPI_DOUBLE, MPI_MAX, comm);
  r.mean /= size;
  return r;
}

}  // namespace mini5d::measure
