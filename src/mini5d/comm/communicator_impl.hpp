// SPDX-License-Identifier: BSD-3-Clause
// Template bodies of communicator.hpp. Each operation: make the buffers addressable
// by MPI (staging if needed), post or run the MPI call, account it.
#pragma once
#include <numeric>

namespace mini5d::comm {

template <class T>
struct Communicator::Addressable {
  T* ptr = nullptr;
  std::function<void()> copy_back;  // empty when no staging
  std::shared_ptr<void> hold;       // the staging buffer, busy while this is held

  // The blocking reduce-scatters, which differ only in their MPI call: call(send, recv)
  // on addressable pointers, accounted as `elements` values. A member of this nested
  // class because it needs the communicator's private parts and communicator.hpp
  // declares no helper for it.
  template <class Call>
  static void blocking_reduce_scatter(const Communicator& c, VecU<T> send, VecU<T> recv, double elements,
                                      Traffic t, Call&& call) {
    if (c.size_ == 1) {
      Kokkos::deep_copy(ExecSpace(), recv, send);  // ordered before the next kernel on the instance
      return;
    }
    const double t0 = MPI_Wtime();
    watchdog::Scope waiting(c.axis_, "reduce-scatter");
    auto s = c.addressable(send, true);
    auto r = c.addressable(recv, false);
    call(s.ptr, r.ptr);
    if (r.copy_back) r.copy_back();
    c.account_blocking(t, elements * sizeof(T), t0);
  }
};

template <class T>
Communicator::Addressable<T> Communicator::addressable(VecU<T> v, bool copy_in) const {
  constexpr bool host_ok = Kokkos::SpaceAccessibility<Kokkos::HostSpace, MemSpace>::accessible;
  if (transport_ == Transport::device || (host_ok && transport_ == Transport::staged)) return {v.data(), {}, {}};
  void* at = nullptr;
  auto hold = staging_->acquire(std::int64_t(v.extent(0) * sizeof(T)), &at);
  Kokkos::View<T*, StagingSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> h(static_cast<T*>(at), v.extent(0));
  if (copy_in) Kokkos::deep_copy(h, v);  // complete on return: MPI may read it at once
  return {h.data(), [h, v]() { Kokkos::deep_copy(v, h); }, std::move(hold)};
}

template <class T>
void Communicator::allreduce(VecU<T> buf, Traffic t) {
  if (size_ == 1) return;
  const double t0 = MPI_Wtime();
  watchdog::Scope waiting(axis_, "allreduce");
  auto a = addressable(buf, true);
  MPI_Allreduce(MPI_IN_PLACE, a.ptr, int(buf.extent(0)), mpi_type<T>(), mpi_sum<T>(), get());
  if (a.copy_back) a.copy_back();
  account_blocking(t, double(buf.extent(0)) * sizeof(T), t0);
}

template <class T>
Request Communicator::iallreduce(VecU<T> buf, Traffic t) {
  if (size_ == 1) return {};
  auto p = std::make_unique<Pending>();
  auto a = addressable(buf, true);
  p->finish = a.copy_back;
  p->staging = {a.hold};
  p->op = "allreduce";
  p->posted_at = MPI_Wtime();
  MPI_Iallreduce(MPI_IN_PLACE, a.ptr, int(buf.extent(0)), mpi_type<T>(), mpi_sum<T>(), get(), &p->req);
  return post(std::move(p), t, double(buf.extent(0)) * sizeof(T));
}

template <class T>
void Communicator::reduce_scatter(VecU<T> send, VecU<T> recv, const std::vector<int>& counts, Traffic t) {
  const long total = std::accumulate(counts.begin(), counts.end(), 0L);
  Addressable<T>::blocking_reduce_scatter(*this, send, recv, double(total), t, [&](T* s, T* r) {
    MPI_Reduce_scatter(s, r, counts.data(), mpi_type<T>(), mpi_sum<T>(), get());
  });
}

template <class T>
Request Communicator::ireduce_scatter(VecU<T> send, VecU<T> recv, const std::vector<int>& counts, Traffic t) {
  if (size_ == 1) {
    Kokkos::deep_copy(ExecSpace(), recv, send);  // ordered before the next kernel on the instance
    return {};
  }
  auto p = std::make_unique<Pending>();
  p->counts = counts;
  auto s = addressable(send, true);
  auto r = addressable(recv, false);
  p->finish = r.copy_back;
  p->staging = {s.hold, r.hold};  // both staged buffers stay busy until completion
  p->op = "reduce-scatter";
  p->posted_at = MPI_Wtime();
  MPI_Ireduce_scatter(s.ptr, r.ptr, p->counts.data(), mpi_type<T>(), mpi_sum<T>(), get(), &p->req);
  const long total = std::accumulate(counts.begin(), counts.end(), 0L);
  return post(std::move(p), t, double(total) * sizeof(T));
}

template <class T>
void Communicator::reduce_scatter_block(VecU<T> send, VecU<T> recv, Traffic t) {
  Addressable<T>::blocking_reduce_scatter(*this, send, recv, double(send.extent(0)), t, [&](T* s, T* r) {
    MPI_Reduce_scatter_block(s, r, int(recv.extent(0)), mpi_type<T>(), mpi_sum<T>(), get());
  });
}

template <class T>
void Communicator::allgather(VecU<T> buf, Traffic t) {
  if (size_ == 1) return;  // this rank's part is all there is
  const double t0 = MPI_Wtime();
  watchdog::Scope waiting(axis_, "allgather");
  auto a = addressable(buf, true);
  MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, a.ptr, int(buf.extent(0)) / size_, mpi_type<T>(), get());
  if (a.copy_back) a.copy_back();
  account_blocking(t, double(buf.extent(0)) * sizeof(T), t0);
}

template <class T>
void Communicator::allgatherv(VecU<T> buf, const std::vector<int>& counts, const std::vector<int>& displs, Traffic t) {
  if (size_ == 1) return;  // this rank's part is all there is
  const double t0 = MPI_Wtime();
  watchdog::Scope waiting(axis_, "allgather");
  auto a = addressable(buf, true);
  MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, a.ptr, counts.data(), displs.data(), mpi_type<T>(), get());
  if (a.copy_back) a.copy_back();
  const long total = std::accumulate(counts.begin(), counts.end(), 0L);
  account_blocking(t, double(total) * sizeof(T), t0);
}

template <class T>
Request Communicator::iallgatherv(VecU<T> buf, const std::vector<int>& counts, const std::vector<int>& displs, Traffic t) {
  if (size_ == 1) return {};
  auto p = std::make_unique<Pending>();
  p->counts = counts;
  p->displs = displs;
  auto a = addressable(buf, true);
  p->finish = a.copy_back;
  p->staging = {a.hold};
  p->op = "allgather";
  p->posted_at = MPI_Wtime();
  MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, a.ptr, p->counts.data(), p->displs.data(),
                  mpi_type<T>(), get(), &p->req);
  const long total = std::accumulate(counts.begin(), counts.end(), 0L);
  return post(std::move(p), t, double(total) * sizeof(T));
}

template <class T>
void Communicator::alltoallv(VecU<T> send, const std::vector<int>& send_counts, const std::vector<int>& send_displs,
                             VecU<T> recv, const std::vector<int>& recv_counts, const std::vector<int>& recv_displs,
                             Traffic t) {
  const double t0 = MPI_Wtime();
  watchdog::Scope waiting(axis_, "alltoallv");
  auto s = addressable(send, true);
  auto r = addressable(recv, false);
  MPI_Alltoallv(s.ptr, send_counts.data(), send_displs.data(), mpi_type<T>(), r.ptr, recv_counts.data(),
                recv_displs.data(), mpi_type<T>(), get());
  if (r.copy_back) r.copy_back();
  const long total = std::accumulate(send_counts.begin(), send_counts.end(), 0L);
  account_blocking(t, double(total) * sizeof(T), t0);
}

template <class T>
void Communicator::send(VecU<T> buf, int dest, int tag, Traffic t) {
  const double t0 = MPI_Wtime();
  watchdog::Scope waiting(axis_, "send");
  auto a = addressable(buf, true);
  MPI_Send(a.ptr, int(buf.extent(0)), mpi_type<T>(), dest, tag, get());
  account_blocking(t, double(buf.extent(0)) * sizeof(T), t0);
}

template <class T>
void Communicator::recv(VecU<T> buf, int src, int tag, Traffic t) {
  const double t0 = MPI_Wtime();
  watchdog::Scope waiting(axis_, "recv");
  auto a = addressable(buf, false);
  MPI_Recv(a.ptr, int(buf.extent(0)), mpi_type<T>(), src, tag, get(), MPI_STATUS_IGNORE);
  if (a.copy_back) a.copy_back();
  account_blocking(t, double(buf.extent(0)) * sizeof(T), t0);
}

template <class T>
Request Communicator::isend(VecU<T> buf, int dest, int tag, Traffic t) {
  auto p = std::make_unique<Pending>();
  auto a = addressable(buf, true);
  p->staging = {a.hold};  // a staged copy stays busy until the send completes
  p->op = "send";
  p->posted_at = MPI_Wtime();
  MPI_Isend(a.ptr, int(buf.extent(0)), mpi_type<T>(), dest, tag, get(), &p->req);
  return post(std::move(p), t, double(buf.extent(0)) * sizeof(T));
}

template <class T>
Request Communicator::irecv(VecU<T> buf, int src, int tag, Traffic t) {
  auto p = std::make_unique<Pending>();
  auto a = addressable(buf, false);
  p->finish = a.copy_back;
  p->staging = {a.hold};
  p->op = "recv";
  p->posted_at = MPI_Wtime();
  MPI_Irecv(a.ptr, int(buf.extent(0)), mpi_type<T>(), src, tag, get(), &p->req);
  return post(std::move(p), t, double(buf.extent(0)) * sizeof(T));
}

template <class T>
Request Communicator::isendrecv(VecU<T> out, int dest, VecU<T> in, int src, int tag, Traffic t) {
  auto p = std::make_unique<Pending>();
  auto o = addressable(out, true);
  auto i = addressable(in, false);
  p->finish = i.copy_back;
  p->staging = {o.hold, i.hold};
  p->op = "sendrecv";
  p->posted_at = MPI_Wtime();
  MPI_Irecv(i.ptr, int(in.extent(0)), mpi_type<T>(), src, tag, get(), &p->req2);
  MPI_Isend(o.ptr, int(out.extent(0)), mpi_type<T>(), dest, tag, get(), &p->req);
  return post(std::move(p), t, double(out.extent(0)) * sizeof(T));
}

}  // namespace mini5d::comm
