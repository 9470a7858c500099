// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/comm/communicator.hpp"

#include <algorithm>
#include <thread>

namespace mini5d::comm {

Request& Request::operator=(Request&& o) noexcept {
  if (this != &o) {
    if (p_) wait();
    p_ = std::move(o.p_);
  }
  return *this;
}

Request::~Request() {
  if (p_) wait();
}

// In flight: from the post to the completion this rank observed. Exposed: every moment
// this rank spent inside MPI or staging for the operation (posting, each test, the
// wait, copying results back). Without an asynchronous progress thread MPICH does a
// collective's work only inside MPI calls, so the time in the tests is work done on
// the critical path, not hidden behind compute.
// The in-flight time ends after the copy back too, so the exposed intervals, all
// inside [posted_at, end], never sum to more than it (test_comm checks exposed <= in
// flight; ending it before the copy let a blocking wait's copy push exposed past it).
void Request::complete() {
  const double now = MPI_Wtime();
  if (p_->finish) p_->finish();
  const double end = MPI_Wtime();
  p_->exposed += end - now;
  accounts().record(p_->axis, p_->traffic, p_->bytes, end - p_->posted_at, p_->exposed);
  p_.reset();
}

namespace {
constexpr int kPollsBeforeYield = 100;
}  // namespace

bool Request::test() {
  if (!p_) return true;
  int flag = 0;
  const double t0 = MPI_Wtime();
  if (p_->req2 == MPI_REQUEST_NULL) {
    MPI_Test(&p_->req, &flag, MPI_STATUS_IGNORE);
  } else {
    // A send-receive pair: both must be done (requests are freed only when all are).
    MPI_Request both[2] = {p_->req, p_->req2};
    MPI_Testall(2, both, &flag, MPI_STATUSES_IGNORE);
    p_->req = both[0];
    p_->req2 = both[1];
  }
  p_->exposed += MPI_Wtime() - t0;
  if (flag) complete();
  return flag != 0;
}

void Request::wait() {
  if (!p_) return;
  {
    watchdog::Scope waiting(p_->axis, p_->op);
    const double t0 = MPI_Wtime();
    // MPI_Wait would poll without pause. Poll a while (a message due soon costs no
    // extra latency), then hand the core over between polls: where ranks outnumber cores
    // (virtual nodes, CI) the rank that will send is often waiting for this core; with
    // a core to itself, the yield returns at once.
    MPI_Request both[2] = {p_->req, p_->req2};  // req2: a send-receive pair's receive, else null
    for (int polls = 0, done = 0;; ++polls) {
      MPI_Testall(2, both, &done, MPI_STATUSES_IGNORE);
      if (done) break;
      if (polls >= kPollsBeforeYield) std::this_thread::yield();
    }
    p_->req = both[0];
    p_->req2 = both[1];
    p_->exposed += MPI_Wtime() - t0;
  }
  complete();
}

Communicator::Communicator(grid::CommHandle group, std::string axis, Transport transport)
    : group_(std::move(group)),
      axis_(std::move(axis)),
      transport_(transport),
      staging_(std::make_shared<StagingPool>()) {
  rank_ = group_.rank();
  size_ = group_.size();
}

Request Communicator::post(std::unique_ptr<Pending> p, Traffic t, double bytes) const {
  p->axis = axis_;
  p->traffic = t;
  p->bytes = bytes;
  // Posting itself blocks for a moment (staging copies, MPI bookkeeping).
  p->exposed = MPI_Wtime() - p->posted_at;
  return Request(std::move(p));
}

void Communicator::account_blocking(Traffic t, double bytes, double t0) const {
  const double dt = MPI_Wtime() - t0;
  accounts().record(axis_, t, bytes, dt, dt);
}

void Communicator::allreduce_host(double* values, int n, Op op, Traffic t) {
  if (size_ == 1) return;
  const double t0 = MPI_Wtime();
  watchdog::Scope waiting(axis_, "allreduce");
  const MPI_Op mop = op == Op::sum ? MPI_SUM : op == Op::min ? MPI_MIN : MPI_MAX;
  MPI_Allreduce(MPI_IN_PLACE, values, n, MPI_DOUBLE, mop, get());
  account_blocking(t, double(n) * sizeof(double), t0);
}

void Communicator::allgather_host(const double* mine, int n, double* all, Traffic t) {
  if (size_ == 1) {
    std::copy(mine, mine + n, all);
    return;
  }
  const double t0 = MPI_Wtime();
  watchdog::Scope waiting(axis_, "allgather");
  MPI_Allgather(mine, n, MPI_DOUBLE, all, n, MPI_DOUBLE, get());
  account_blocking(t, double(n) * size_ * sizeof(double), t0);
}

}  // namespace mini5d::comm
