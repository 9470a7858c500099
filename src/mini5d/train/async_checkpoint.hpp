// SPDX-License-Identifier: BSD-3-Clause
// Asynchronous checkpoints (checkpoint.async): the training thread copies the state a
// checkpoint writes (weights and both AdamW moments) into host staging buffers, which
// is the only part that blocks, and one writer thread per rank writes the file from
// them while training goes on.
//
// Why a thread and not non-blocking I/O: the save is parallel HDF5 (metadata
// collectives, agreements after every dataset, the atomic commit); HDF5 has no
// asynchronous parallel writes in the versions mini5d supports, and moving the whole
// save to another thread keeps its crash safety as it is. The writer owns a duplicate
// of the run's communicator, made on the training thread, so its collectives never
// match the training's; MPI must provide MPI_THREAD_MULTIPLE (asked at MPI_Init_thread).
// While a save runs the writer is the only thread that calls HDF5 (the library is not
// thread-safe): every other use (a blocking save, a load) waits for it first.
//
// At most one save is in flight: the next one, the end of the run and a stop signal
// wait for it, and the wait is measured. Idle, the writer sleeps on a condition
// variable. The writer's save is a watchdog scope of its own (comm/watchdog.hpp), timed
// by its progress as a blocking save is.
#pragma once
#include <mpi.h>

#include <condition_variable>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "mini5d/checkpoint/checkpoint.hpp"
#include "mini5d/core/memory_ledger.hpp"
#include "mini5d/parallel/dp/zero_optimizer.hpp"
#include "mini5d/train/training_state.hpp"

namespace mini5d::train {

// True when MPI runs with MPI_THREAD_MULTIPLE, which the writer thread needs.
bool background_saves_possible();

class AsyncCheckpointWriter {
 public:
  // Collective over `comm` (duplicates it); starts the writer thread.
  explicit AsyncCheckpointWriter(MPI_Comm comm);
  // Waits for a save in flight (its error is dropped), stops the thread, frees the
  // communicator.
  ~AsyncCheckpointWriter();
  AsyncCheckpointWriter(const AsyncCheckpointWriter&) = delete;
  AsyncCheckpointWriter& operator=(const AsyncCheckpointWriter&) = delete;

  // Allocates the staging buffers for `opt`'s state and touches them (a first copy),
  // at the start of the run: the first save's snapshot then pays no page faults.
  void prepare(const dp::ZeroOptimizer& opt);
  // Copies `opt`'s state into the staging buffers (allocated on first use and charged
  // to the ledger's checkpoint_staging) and hands the save to the writer. The caller
  // has waited for the previous save (wait()). Returns this rank's seconds of copying.
  double start(const dp::ZeroOptimizer& opt, const std::string& dir, const std::string& name,
               const checkpoint::CheckpointMeta& meta, int keep_last);
  bool in_flight() const;
  // Has the save in flight finished (written or failed)? Has it been written? Neither
  // blocks. A failure is collected only where every rank waits (wait()), at the same step.
  bool finished() const;
  bool written() const;
  // Blocks until the save in flight is done (a condition variable, no spinning); its
  // I/O figures, or its error rethrown (an AgreedError on every rank together).
  checkpoint::IoStats wait();

 private:
  void loop();
  MPI_Comm comm_ = MPI_COMM_NULL;
  std::vector<WrittenPart> staged_;  // host copies the writer reads
  mem::Charge charge_{mem::Category::checkpoint_staging, 0};
  // The job, guarded by mu_.
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool has_job_ = false, done_ = false, quit_ = false;
  std::string dir_, name_;
  checkpoint::CheckpointMeta meta_;
  int keep_ = 0;
  checkpoint::IoStats io_;
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace mini5d::train
