// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/train/async_checkpoint.hpp"

#include <Kokkos_Core.hpp>
#include <stdexcept>
#include <utility>

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "mini5d/comm/watchdog.hpp"

namespace mini5d::train {

bool background_saves_possible() {
  int level = MPI_THREAD_SINGLE;
  MPI_Query_thread(&level);
  return level == MPI_THREAD_MULTIPLE;
}

AsyncCheckpointWriter::AsyncCheckpointWriter(MPI_Comm comm) {
  MPI_Comm_dup(comm, &comm_);
  thread_ = std::thread([this] { loop(); });
}

AsyncCheckpointWriter::~AsyncCheckpointWriter() {
  {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return !has_job_ || done_; });
    quit_ = true;
  }
  cv_.notify_all();
  thread_.join();
  MPI_Comm_free(&comm_);
}

void AsyncCheckpointWriter::prepare(const dp::ZeroOptimizer& opt) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!has_job_) charge_.grow(stage_parts(opt, staged_));
}

double AsyncCheckpointWriter::start(const dp::ZeroOptimizer& opt, const std::string& dir, const std::string& name,
                                    const checkpoint::CheckpointMeta& meta, int keep_last) {
  Kokkos::Timer timer;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (has_job_) throw std::logic_error("mini5d: AsyncCheckpointWriter::start with a save in flight");
  }
  // The writer is idle: the staging buffers are the training thread's until handed over.
  charge_.grow(stage_parts(opt, staged_));
  const double seconds = timer.seconds();
  {
    std::lock_guard<std::mutex> lock(mu_);
    dir_ = dir, name_ = name, meta_ = meta, keep_ = keep_last;
    has_job_ = true, done_ = false;
    io_ = {}, error_ = nullptr;
  }
  cv_.notify_all();
  return seconds;
}

bool AsyncCheckpointWriter::in_flight() const {
  std::lock_guard<std::mutex> lock(mu_);
  return has_job_;
}

bool AsyncCheckpointWriter::finished() const {
  std::lock_guard<std::mutex> lock(mu_);
  return has_job_ && done_;
}

bool AsyncCheckpointWriter::written() const {
  std::lock_guard<std::mutex> lock(mu_);
  return has_job_ && done_ && !error_;
}

checkpoint::IoStats AsyncCheckpointWriter::wait() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return !has_job_ || done_; });
  has_job_ = false, done_ = false;
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  return io_;
}

void AsyncCheckpointWriter::loop() {
  static const std::string kAxis = "checkpoint";
  comm::watchdog::as_background_writer();
  // The lowest priority (this thread only): where the writer shares a core with
  // training, training goes first and the write fills the gaps.
  setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 19);
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return quit_ || (has_job_ && !done_); });
      if (quit_) return;
    }
    // The job's fields are not touched by the training thread until done_ is set.
    checkpoint::IoStats io;
    std::exception_ptr error;
    try {
      comm::watchdog::Scope saving(kAxis, "save", true);
      io = checkpoint::save_checkpoint(comm_, dir_, name_, meta_, shards_of(staged_), keep_);
    } catch (...) {
      error = std::current_exception();
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      io_ = io, error_ = error, done_ = true;
    }
    cv_.notify_all();
  }
}

}  // namespace mini5d::train
