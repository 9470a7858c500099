// SPDX-License-Identifier: BSD-3-Clause
// The trainer's asynchronous saves (checkpoint.async, train/async_checkpoint.hpp): the
// snapshot that blocks, the write handed to the writer thread, and the waits for it
// (the next save, the end of the run, a stop signal), each measured and reported.
#include <iostream>

#include "mini5d/core/error.hpp"
#include "mini5d/train/trainer.hpp"

namespace mini5d::train {

void Trainer::prepare_background_saves() {
  if (!deck_.checkpoint.async || writer_) return;
  if (!background_saves_possible()) {
    int rank = 0;
    MPI_Comm_rank(grid_->cart().get(), &rank);
    if (rank == 0)
      std::cout << "checkpoint.async: MPI does not provide MPI_THREAD_MULTIPLE, which the background writer "
                   "needs; every save blocks instead\n";
    return;
  }
  writer_ = std::make_unique<AsyncCheckpointWriter>(grid_->cart().get());
  writer_->prepare(*zero_);  // the values are not used: only the pages are touched
}

void Trainer::save_in_background(const std::string& reason, const Notify& notify) {
  finish_background_save(notify, "next save");
  zero_->settle();  // the weights of this step, not half-gathered ones
  const std::string name = checkpoint_name(next_step_);
  double snapshot = writer_->start(*zero_, deck_.checkpoint.dir, name, checkpoint_meta(), deck_.checkpoint.keep);
  comms_->world().allreduce_host(&snapshot, 1, comm::Communicator::Op::max);  // the slowest rank's
  CheckpointEvent e{"save", deck_.checkpoint.dir + "/" + name + ".h5", reason, next_step_, 0, 0, {}, true, 0, 0, ""};
  e.snapshot_seconds = snapshot;
  pending_ = e;
}

void Trainer::finish_background_save(const Notify& notify, const char* where) {
  if (!pending_) return;
  CheckpointEvent e = *pending_;
  pending_.reset();
  Kokkos::Timer waiting;
  const bool was_done = writer_->finished();
  try {
    const auto io = writer_->wait();
    e.bytes = io.bytes, e.seconds = io.seconds;
  } catch (const AgreedError& err) {
    // Every rank's writer failed together; the previous checkpoint stays latest.
    if (std::string(where) != "end of run" && std::string(where) != "stop signal") throw;
    if (record_.halted.empty())
      record_.halted = std::string(err.what()) + " (the background save after step " + std::to_string(e.step) +
                " failed: the previous checkpoint stays latest)";
    return;
  }
  if (!was_done) {
    e.wait_seconds = waiting.seconds();
    e.waited_at = where;
  }
  record_.checkpoints.push_back(e);
  if (notify) notify(e);
}

void Trainer::poll_background_save(const Notify& notify) {
  // Written only: the ranks see a write end at different steps, and a failure must stop
  // them at the same one (the next save or the end of the run).
  if (pending_ && writer_->written()) finish_background_save(notify, "");
}

}  // namespace mini5d::train
