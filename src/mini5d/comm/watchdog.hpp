// SPDX-License-Identifier: BSD-3-Clause
// The collective watchdog. A rank waiting in a collective that another
// rank never joins (a node that hangs, a rank stuck in I/O) would wait until the batch
// system's time limit, burning the allocation and saying nothing. While a rank is inside
// a blocking operation of the communication layer (or a checkpoint save) it is marked
// here; a background thread checks the mark, and once one has lasted longer than
// parallel.collective_timeout_s it prints one line naming the rank, step, axis and
// operation, and ends the process, which makes the launcher end the job.
//
// A checkpoint save is many collectives (one or more per dataset) and its length grows
// with the model, so its scope measures progress instead: the save calls progress()
// after each dataset and each agreement, and only a save that has made no progress for
// the timeout (a rank that stopped, the others waiting for it) ends the job.
//
// Start-up, a resume's load and the end of the run (the summaries' gathers, the report)
// have no one collective to time, and some of their MPI calls are MPI's own
// (communicator splits, HDF5's collective reads): each is a by-progress phase scope,
// and every operation that completes inside it (a nested scope closing) is progress.
//
// Which rank stopped answering. The ranks waiting in the same scope cannot ask MPI who
// is missing (the collective is blocking), so once a rank has waited half the timeout
// its thread writes a heartbeat file, rank-<r>, into a folder every rank sees (the
// checkpoint folder's .mini5d-watchdog/, on the shared file system a checkpoint needs
// anyway), about once a second. At the timeout the line names the ranks with no fresh
// heartbeat: they are not waiting with the others (stopped, hung, or gone). Nothing is
// written unless a wait lasts half the timeout, and a rank removes its file when its
// wait ends.
//
// An asynchronous checkpoint's writer thread (train/async_checkpoint.hpp) has scopes
// of its own, timed apart from the training thread's: its save progresses while the
// training thread waits in step collectives, and a writer stuck because another rank's
// writer is gone ends the job the same way.
//
// The thread calls no MPI function: it leaves the job with _Exit, and mpiexec (or
// srun) kills the other ranks.
#pragma once
#include <string>

namespace mini5d::comm::watchdog {

// Starts the watchdog thread (once per process; later calls change the timeout).
// timeout_s <= 0 disables it.
void start(double timeout_s, int world_rank);
// The training step reported by a timeout message.
void set_step(long step);
// Names the silent ranks in a timeout line: heartbeats go to `dir` (created when first
// needed), for a world of `world_size` ranks. Empty dir: no naming.
void name_silent_ranks(const std::string& dir, int world_size);

// Marks this rank as inside a blocking operation for its lifetime. `axis` and `op`
// must outlive the scope (string literals, or a communicator's axis name).
// With `by_progress`, the timeout counts from the scope's last progress() instead of
// from its opening, and the message says "has made no progress for".
class Scope {
 public:
  Scope(const std::string& axis, const char* op, bool by_progress = false);
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  bool counted_ = false;  // the watchdog was running when the scope opened
};

// Marks the calling thread as the background checkpoint writer: its scopes and
// progress() are timed apart from the training thread's. Call once, first thing on it.
void as_background_writer();

// The rank moved on inside its outermost scope (a dataset written, the ranks agreed):
// restarts that scope's clock. No effect outside a scope or without the watchdog.
void progress();

// For tests: MINI5D_FAULT_SLEEP="rank=R,step=S,seconds=T" makes world rank R sleep T
// seconds before step S's first collective, so that the others wait in it.
void maybe_injected_sleep(long step);
// For tests: MINI5D_FAULT_STOP="rank=R,at=POINT" makes world rank R stop itself with
// SIGSTOP (as `kill -STOP` would) when it reaches POINT: start-up (after reading the
// deck, before its first agreement), load (a resume, after reading the checkpoint's
// metadata), end (after the last step, before the end of the run's gathers).
void maybe_injected_stop(const char* point);  // the world rank start() was given

}  // namespace mini5d::comm::watchdog
