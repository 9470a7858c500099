// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/parallel/pp/executor.hpp"

#include <mpi.h>

#include <stdexcept>

#include "mini5d/kernels/profile.hpp"

namespace mini5d::pp {

namespace {
// After a forward or backward: a fence when MPI sends its output next (to the next or
// the previous stage), else only the one the phase timers want.
void settle(CVecU<Byte> out, const char* why) {
  if (out.data())
    fence(why);
  else
    prof::fence_for_timing(why);
}
}  // namespace

const char* to_string(Event::Kind k) {
  switch (k) {
    case Event::forward: return "forward";
    case Event::backward: return "backward";
    case Event::wait_forward: return "wait_forward";
    case Event::wait_backward: return "wait_backward";
    case Event::send_forward: return "send_forward";
    case Event::send_backward: return "send_backward";
  }
  return "?";
}

Executor::Executor(const Spec& spec, PpComm& comm, std::int64_t boundary_bytes)
    : spec_(spec),
      rank_(comm.rank()),
      comm_(comm),
      n_(boundary_bytes),
      actions_(schedule(spec, comm.rank())),
      buffers_mem_(mem::Category::comm_buffers, 0) {}

VecU<Byte> Executor::take() {
  if (free_.empty()) {
    pool_.emplace_back(Kokkos::ViewAllocateWithoutInitializing("mini5d::pp::boundary"), n_);
    buffers_mem_.grow(mem::view_bytes(pool_.back()));
    free_.push_back(pool_.back().data());
  }
  Byte* p = free_.back();
  free_.pop_back();
  return VecU<Byte>(p, n_);
}

void Executor::give(VecU<Byte> buf) {
  if (buf.data()) free_.push_back(buf.data());
}

void Executor::progress_sends(bool wait) {
  for (auto it = sends_.begin(); it != sends_.end();) {
    if (wait) it->req.wait();
    if (wait || it->req.test())
      it = sends_.erase(it);
    else
      ++it;
  }
}

void Executor::settle_stage_sends(int mb, int chunk) {
  for (auto it = sends_.begin(); it != sends_.end();) {
    if (!it->forward || (it->mb == mb && it->chunk == chunk)) {
      it->req.wait();
      it = sends_.erase(it);
    } else {
      ++it;
    }
  }
}

StepTimeline Executor::run(Stage& stage, long step) {
  const int P = spec_.p * spec_.v;
  using Key = std::tuple<int, int, int>;  // (direction, micro-batch, chunk)
  std::map<Key, std::pair<comm::Request, VecU<Byte>>> recvs;
  StepTimeline tl;
  tl.step = step;
  comm_.barrier();
  tl.start = MPI_Wtime();
  // Every receive of the step, posted now.
  for (const Action& a : actions_) {
    if (a.op != Op::recv_forward && a.op != Op::recv_backward) continue;
    const Direction d = a.op == Op::recv_forward ? Direction::forward : Direction::backward;
    VecU<Byte> buf = take();
    auto req = comm_.post_recv(buf, a.peer, d, a.mb, virtual_stage(spec_, rank_, a.chunk));
    recvs.emplace(Key{int(d), a.mb, a.chunk}, std::make_pair(std::move(req), buf));
  }
  std::map<std::pair<int, int>, VecU<Byte>> inputs;  // forward inputs kept until the backward
  CVecU<Byte> out;  // what the last compute returned, to send from the stage's memory
  for (std::size_t i = 0; i < actions_.size(); ++i) {
    const Action& a = actions_[i];
    const bool last_vs = virtual_stage(spec_, rank_, a.chunk) == P - 1;
    const bool first_vs = virtual_stage(spec_, rank_, a.chunk) == 0;
    switch (a.op) {
      case Op::recv_forward:
      case Op::recv_backward: {
        const Direction d = a.op == Op::recv_forward ? Direction::forward : Direction::backward;
        auto& r = recvs.at(Key{int(d), a.mb, a.chunk});
        Event e{a.op == Op::recv_forward ? Event::wait_forward : Event::wait_backward, a.mb, a.chunk, MPI_Wtime(), 0};
        r.first.wait();
        e.t1 = MPI_Wtime();
        tl.events.push_back(e);
        break;
      }
      case Op::forward: {
        VecU<Byte> in;
        if (!first_vs) in = recvs.at(Key{0, a.mb, a.chunk}).second, inputs[{a.mb, a.chunk}] = in;
        Event e{Event::forward, a.mb, a.chunk, MPI_Wtime(), 0};
        out = stage.forward(a.mb, a.chunk, in);
        if (last_vs) out = CVecU<Byte>();
        settle(out, "mini5d::pp::forward_done");
        e.t1 = MPI_Wtime();
        tl.events.push_back(e);
        break;
      }
      case Op::backward: {
        VecU<Byte> grad = last_vs ? VecU<Byte>() : recvs.at(Key{1, a.mb, a.chunk}).second;
        settle_stage_sends(a.mb, a.chunk);
        Event e{Event::backward, a.mb, a.chunk, MPI_Wtime(), 0};
        out = stage.backward(a.mb, a.chunk, grad);
        if (first_vs) out = CVecU<Byte>();
        settle(out, "mini5d::pp::backward_done");
        e.t1 = MPI_Wtime();
        tl.events.push_back(e);
        // The received gradient and the forward's input are done with.
        if (!last_vs) give(grad), recvs.erase(Key{1, a.mb, a.chunk});
        if (!first_vs) {
          give(inputs.at({a.mb, a.chunk}));
          inputs.erase({a.mb, a.chunk});
          recvs.erase(Key{0, a.mb, a.chunk});
        }
        break;
      }
      case Op::send_forward:
      case Op::send_backward: {
        const bool fw = a.op == Op::send_forward;
        const int vs = virtual_stage(spec_, rank_, a.chunk) + (fw ? 1 : -1);
        Event e{fw ? Event::send_forward : Event::send_backward, a.mb, a.chunk, MPI_Wtime(), 0};
        if (out.extent(0) != std::size_t(n_)) throw std::logic_error("mini5d: pipeline stage returned no boundary tensor");
        // MPI only reads the stage's memory (settle_stage_sends keeps it unchanged meanwhile).
        const VecU<Byte> from(const_cast<Byte*>(out.data()), out.extent(0));
        sends_.push_back({comm_.send(from, a.peer, fw ? Direction::forward : Direction::backward, a.mb, vs), fw,
                          a.mb, a.chunk});
        e.t1 = MPI_Wtime();
        tl.events.push_back(e);
        out = CVecU<Byte>();
        break;
      }
    }
    progress_sends(false);
  }
  progress_sends(true);
  if (!recvs.empty() || !inputs.empty()) throw std::logic_error("mini5d: pipeline step left receives unused");
  tl.end = MPI_Wtime();
  tl.span = comm_.max(tl.end - tl.start);
  return tl;
}

}  // namespace mini5d::pp
