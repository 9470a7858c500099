// SPDX-License-Identifier: BSD-3-Clause
// The communication layer: MPI collectives and point-to-point on Kokkos Views, each
// call accounted under the group's axis name (comm/accounts.hpp). All reductions are
// sums. Views in a memory space the host cannot touch are staged through the
// communicator's host buffers (comm/staging.hpp) unless MPI takes device pointers
// (parallel.gpu_aware_mpi, comm/device_mpi.hpp). Non-blocking forms return a Request that the
// caller progresses with test() (MPICH progresses collectives only inside MPI calls,
// so the backward loop polls) and completes with wait(). A group of one rank moves
// nothing: its collectives are local (a copy at most) and are not accounted, so a
// 1-rank run reports no traffic. docs/architecture.md.
#pragma once
#include <mpi.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "mini5d/comm/accounts.hpp"
#include "mini5d/comm/staging.hpp"
#include "mini5d/comm/watchdog.hpp"
#include "mini5d/grid/process_grid.hpp"
#include "mini5d/comm/bf16_mpi.hpp"
#include "mini5d/kernels/bf16.hpp"
#include "mini5d/kernels/views.hpp"

namespace mini5d::comm {

template <class T> MPI_Datatype mpi_type();
template <> inline MPI_Datatype mpi_type<float>() { return MPI_FLOAT; }
template <> inline MPI_Datatype mpi_type<double>() { return MPI_DOUBLE; }
template <> inline MPI_Datatype mpi_type<int>() { return MPI_INT; }
template <> inline MPI_Datatype mpi_type<unsigned char>() { return MPI_BYTE; }  // raw bytes (pipeline boundaries)
template <> inline MPI_Datatype mpi_type<bf16>() { return bf16_datatype(); }
// The sum the reductions use: MPI's own, or ours for bf16 (comm/bf16_mpi.hpp).
template <class T> MPI_Op mpi_sum() { return MPI_SUM; }
template <> inline MPI_Op mpi_sum<bf16>() { return bf16_sum(); }

// What a posted operation needs until it completes.
struct Pending {
  MPI_Request req = MPI_REQUEST_NULL;
  MPI_Request req2 = MPI_REQUEST_NULL;  // the receive of a send-receive pair
  std::string axis;
  const char* op = "operation";     // named by the watchdog if its wait hangs
  Traffic traffic = Traffic::grads;
  double bytes = 0, posted_at = 0, exposed = 0;
  std::vector<int> counts, displs;  // argument arrays MPI may read until completion
  std::function<void()> finish;     // copies staged results back, if any
  std::vector<std::shared_ptr<void>> staging;  // staging buffers held until completion
};

// A non-blocking operation in flight (move-only). Destroying one that has not
// completed waits for it, so no buffer is released under MPI's feet.
class Request {
 public:
  Request() = default;
  explicit Request(std::unique_ptr<Pending> p) : p_(std::move(p)) {}
  Request(Request&&) noexcept = default;
  Request& operator=(Request&& o) noexcept;
  ~Request();
  bool test();  // progresses MPI; true once complete (accounted then)
  void wait();  // blocks; the blocked time counts as exposed
  bool active() const { return p_ != nullptr; }

 private:
  void complete();
  std::unique_ptr<Pending> p_;
};

// How a View's memory reaches MPI.
enum class Transport {
  staged,         // host-addressable memory directly, device memory through staging buffers
  device,         // device pointers straight to MPI (GPU-aware MPI)
  always_staged,  // every buffer through the staging buffers, host memory too: runs the
                  // staging path on host builds (tests)
};

class Communicator {
 public:
  Communicator(grid::CommHandle group, std::string axis, Transport transport = Transport::staged);
  int rank() const { return rank_; }
  int size() const { return size_; }
  MPI_Comm get() const { return group_.get(); }
  const std::string& axis() const { return axis_; }
  Transport transport() const { return transport_; }
  const StagingPool& staging() const { return *staging_; }

  // Sum over the group, in place.                       collective over the group
  template <class T> void allreduce(VecU<T> buf, Traffic t);
  template <class T> Request iallreduce(VecU<T> buf, Traffic t);
  // Sum of `send` (sum(counts) elements) over the group; part rank() of the result,
  // counts[rank()] elements, lands in `recv`.             collective over the group
  template <class T> void reduce_scatter(VecU<T> send, VecU<T> recv, const std::vector<int>& counts, Traffic t);
  template <class T> Request ireduce_scatter(VecU<T> send, VecU<T> recv, const std::vector<int>& counts, Traffic t);
  // In place: rank r's counts[r] elements already sit at displs[r] of `buf`; on
  // return every rank holds all parts.                   collective over the group
  template <class T> void allgatherv(VecU<T> buf, const std::vector<int>& counts, const std::vector<int>& displs, Traffic t);
  // Equal parts: `send` holds size() parts of recv.extent(0) elements; their sum over
  // the group, part rank(), lands in `recv`.               collective over the group
  template <class T> void reduce_scatter_block(VecU<T> send, VecU<T> recv, Traffic t);
  // Equal parts, in place: rank r's part (buf.extent(0) / size() elements) already sits
  // at r * that; on return every rank holds all parts.     collective over the group
  template <class T> void allgather(VecU<T> buf, Traffic t);
  template <class T> Request iallgatherv(VecU<T> buf, const std::vector<int>& counts, const std::vector<int>& displs, Traffic t);
  template <class T>
  void alltoallv(VecU<T> send, const std::vector<int>& send_counts, const std::vector<int>& send_displs,
                 VecU<T> recv, const std::vector<int>& recv_counts, const std::vector<int>& recv_displs, Traffic t);
  template <class T> void send(VecU<T> buf, int dest, int tag, Traffic t);
  template <class T> void recv(VecU<T> buf, int src, int tag, Traffic t);
  template <class T> Request isend(VecU<T> buf, int dest, int tag, Traffic t);
  template <class T> Request irecv(VecU<T> buf, int src, int tag, Traffic t);
  // Sends `out` to dest and receives `in` from src (a shift along a ring), as one
  // operation: accounted once, its payload the message sent (out's bytes).
  template <class T> Request isendrecv(VecU<T> out, int dest, VecU<T> in, int src, int tag, Traffic t);
  // Host scalars (loss, norms, flags, timings), reduced in place (sum by default).
  enum class Op { sum, min, max };
  void allreduce_host(double* values, int n, Op op = Op::sum, Traffic t = Traffic::scalars);
  // Every rank's n host values, in rank order, on every rank (all: n * size()).
  void allgather_host(const double* mine, int n, double* all, Traffic t = Traffic::scalars);

 private:
  // A buffer MPI can address: the view's own pointer, or a staging buffer.
  template <class T> struct Addressable;
  template <class T> Addressable<T> addressable(VecU<T> v, bool copy_in) const;
  Request post(std::unique_ptr<Pending> p, Traffic t, double bytes) const;
  void account_blocking(Traffic t, double bytes, double t0) const;

  grid::CommHandle group_;
  std::string axis_;
  Transport transport_;
  std::shared_ptr<StagingPool> staging_;
  int rank_ = 0, size_ = 1;
};

}  // namespace mini5d::comm

#include "mini5d/comm/communicator_impl.hpp"
