// SPDX-License-Identifier: BSD-3-Clause
// Communication accounting: every call of the communication layer is recorded under
// the axis (group) it ran on and what it moved (gradients, weights, activations,
// scalars): calls, payload bytes, wall time in flight (from post to the completion the
// rank observed) and exposed time: all the time the rank spent inside MPI calls for it
// (posting, every test that progressed it, the wait) and staging copies. Without an
// asynchronous progress thread MPI does a non-blocking collective's work only inside
// those calls, so in flight minus exposed is an upper bound on what compute hid. The report prints the per-axis
// totals and the tests check the byte counts against the analytic bill (docs/architecture.md).
//
// Payload bytes of one call are the bytes of the logical buffer it reduces or
// assembles, whatever the algorithm moves on the wire:
//   allreduce: the buffer; reduce_scatter: the whole input; allgather: the whole
//   output; alltoallv: everything this rank sends; send/recv: the message.
#pragma once
#include <map>
#include <string>

namespace mini5d::comm {

enum class Traffic { grads, weights, activations, scalars };
const char* to_string(Traffic t);

struct OpStats {
  long calls = 0;
  double bytes = 0, seconds = 0, exposed = 0;
  void add(const OpStats& o) {
    calls += o.calls;
    bytes += o.bytes;
    seconds += o.seconds;
    exposed += o.exposed;
  }
};

struct AxisStats {
  OpStats total;
  std::map<std::string, OpStats> by_traffic;  // keyed by to_string(Traffic)
};

class Accounts {
 public:
  void record(const std::string& axis, Traffic t, double bytes, double seconds, double exposed);
  const std::map<std::string, AxisStats>& axes() const { return axes_; }
  // Bytes moved on `axis` for traffic `t` (0 if none).
  double bytes(const std::string& axis, Traffic t) const;
  void clear() { axes_.clear(); }

 private:
  std::map<std::string, AxisStats> axes_;
};

// The process's accounts.
Accounts& accounts();

}  // namespace mini5d::comm
