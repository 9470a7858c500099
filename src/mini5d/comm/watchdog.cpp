// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/comm/watchdog.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "mini5d/comm/watchdog_heartbeat.hpp"
#include "mini5d/core/diag.hpp"
#include "mini5d/core/fault_spec.hpp"

namespace mini5d::comm::watchdog {

namespace {
using Clock = std::chrono::steady_clock;

// The outermost open scope of one thread: nested ones (a collective inside a save)
// wait with it.
struct Slot {
  int depth = 0;
  const std::string* axis = nullptr;
  const char* op = nullptr;
  bool by_progress = false;
  Clock::time_point since{};  // the scope's opening, or its last progress()
};

struct State {
  std::mutex mu;
  // [0]: the training thread's scopes; [1]: the background checkpoint writer's, timed
  // on their own (its save makes progress while the training thread waits elsewhere).
  Slot slots[2];
  std::atomic<long> step{0};
  std::atomic<double> timeout_s{0};
  int rank = 0;
  bool started = false;
  // Heartbeats (watchdog_heartbeat.hpp): the folder (empty: none), the world's size,
  // and whether this rank's file is there for the open scope.
  std::string beat_dir;
  int world_size = 0;
  bool beating = false;
};
State& state() {
  static State s;
  return s;
}

thread_local int this_slot = 0;  // 1 on a thread that called as_background_writer()

void watch() {
  auto& s = state();
  Clock::time_point last_beat{};
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    const double limit = s.timeout_s.load();
    if (limit <= 0) continue;
    std::string line, beat, dir;
    int world = 0;
    {
      std::lock_guard<std::mutex> lock(s.mu);
      const auto now = Clock::now();
      // The slot that has waited longest decides; heartbeats are the training thread's.
      for (int k = 0; k < 2 && line.empty(); ++k) {
        const Slot& slot = s.slots[k];
        if (slot.depth == 0) continue;
        const double waited = std::chrono::duration<double>(now - slot.since).count();
        dir = s.beat_dir, world = s.world_size;
        // Half the timeout waited: say so in the heartbeat folder, about once a second.
        if (k == 0 && !dir.empty() && waited >= std::max(1.0, limit / 2) &&
            std::chrono::duration<double>(now - last_beat).count() >= 1.0) {
          beat = "step " + std::to_string(s.step.load()) + ": " + *slot.axis + " " + slot.op;
          s.beating = true;
          last_beat = now;
        }
        if (waited >= limit) {
          char secs[32];
          std::snprintf(secs, sizeof secs, "%.0f", waited);
          line = "mini5d: rank " + std::to_string(s.rank) + ": fatal: step " + std::to_string(s.step.load()) +
                 ": the " + (k == 1 ? "background " : "") + *slot.axis + " " + slot.op +
                 (slot.by_progress ? " has made no progress for " : " has not completed after ") + secs +
                 " s (parallel.collective_timeout_s=" + std::to_string(int(limit)) +
                 "): another rank is hung or gone";
        }
      }
    }
    if (!beat.empty()) write_heartbeat(dir, s.rank, beat);
    if (line.empty()) continue;
    if (!dir.empty() && world > 1) {
      // The waiting ranks have refreshed their files within the last second or two.
      if (const auto silent = silent_ranks(dir, world)) {
        // Every rank waiting (one stuck inside the same save, say): no one to name.
        if (!silent->empty()) line += " (not waiting with the others: " + rank_list(*silent) + ")";
        // One line for the job: the lowest waiting rank speaks; the others leave without
        // a word once it has had time to (the launcher usually ends them first).
        int lowest_waiting = 0;
        while (lowest_waiting < world && std::binary_search(silent->begin(), silent->end(), lowest_waiting))
          ++lowest_waiting;
        if (lowest_waiting < s.rank) {
          std::this_thread::sleep_for(std::chrono::seconds(3));
          std::_Exit(4);
        }
      }
    }
    line += "; ending the job";
    write_stderr(line);
    // Let the launcher forward the line before it tears the job down.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    std::_Exit(4);
  }
}
}  // namespace

void start(double timeout_s, int world_rank) {
  auto& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  s.timeout_s = timeout_s;
  s.rank = world_rank;
  if (s.started || timeout_s <= 0) return;
  s.started = true;
  std::thread(watch).detach();
}

void set_step(long step) { state().step = step; }

void name_silent_ranks(const std::string& dir, int world_size) {
  auto& s = state();
  int rank = 0;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    s.beat_dir = dir;
    s.world_size = world_size;
    rank = s.rank;
  }
  if (!dir.empty()) remove_heartbeat(dir, rank);  // an earlier run's, ended by its watchdog
}

void as_background_writer() { this_slot = 1; }

Scope::Scope(const std::string& axis, const char* op, bool by_progress) {
  auto& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.started) return;
  counted_ = true;
  Slot& slot = s.slots[this_slot];
  if (slot.depth++ == 0) {
    slot.axis = &axis;
    slot.op = op;
    slot.by_progress = by_progress;
    slot.since = Clock::now();
  }
}

void progress() {
  auto& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  Slot& slot = s.slots[this_slot];
  if (slot.depth > 0 && slot.by_progress) slot.since = Clock::now();
}

Scope::~Scope() {
  auto& s = state();
  if (!counted_) return;
  std::string stale;  // this rank's heartbeat, once its outermost wait is over
  {
    std::lock_guard<std::mutex> lock(s.mu);
    Slot& slot = s.slots[this_slot];
    --slot.depth;
    // An operation done inside a by-progress scope (a phase, a save) is its progress.
    if (slot.depth > 0 && slot.by_progress) slot.since = Clock::now();
    if (this_slot == 0 && slot.depth == 0 && s.beating) {
      s.beating = false;
      stale = s.beat_dir;
    }
  }
  if (!stale.empty()) remove_heartbeat(stale, s.rank);
}

void maybe_injected_stop(const char* point) {
  const char* v = std::getenv("MINI5D_FAULT_STOP");
  if (!v) return;
  const std::string spec = v, want = "rank=" + std::to_string(state().rank) + ",at=" + point;
  if (spec == want) std::raise(SIGSTOP);
}

void maybe_injected_sleep(long step) {
  static const std::optional<FaultSpec> spec = fault_spec("MINI5D_FAULT_SLEEP", true);
  if (spec && spec->rank == state().rank && spec->step == step)
    std::this_thread::sleep_for(std::chrono::duration<double>(spec->seconds));
}

}  // namespace mini5d::comm::watchdog
