// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/comm/watchdog.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "mini5d/core/diag.hpp"
#include "mini5d/core/fault_spec.hpp"

namespace mini5d::comm::watchdog {

namespace {
using Clock = std::chrono::steady_clock;

struct State {
  std::mutex mu;
  // The outermost open scope: nested ones (a collective inside a save) wait with it.
  int depth = 0;
  const std::string* axis = nullptr;
  const char* op = nullptr;
  bool by_progress = false;
  Clock::time_point since{};  // the scope's opening, or its last progress()
  std::atomic<long> step{0};
  std::atomic<double> timeout_s{0};
  int rank = 0;
  bool started = false;
};
State& state() {
  static State s;
  return s;
}

void watch() {
  auto& s = state();
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    const double limit = s.timeout_s.load();
    if (limit <= 0) continue;
    std::string line;
    {
      std::lock_guard<std::mutex> lock(s.mu);
      if (s.depth == 0) continue;
      const double waited = std::chrono::duration<double>(Clock::now() - s.since).count();
      if (waited < limit) continue;
      char secs[32];
      std::snprintf(secs, sizeof secs, "%.0f", waited);
      line = "mini5d: rank " + std::to_string(s.rank) + ": fatal: step " + std::to_string(s.step.load()) +
             ": the " + *s.axis + " " + s.op + (s.by_progress ? " has made no progress for " : " has not completed after ") + secs +
             " s (parallel.collective_timeout_s=" + std::to_string(int(limit)) +
             "): another rank is hung or gone; ending the job";
    }
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

Scope::Scope(const std::string& axis, const char* op, bool by_progress) {
  auto& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.started) return;
  counted_ = true;
  if (s.depth++ == 0) {
    s.axis = &axis;
    s.op = op;
    s.by_progress = by_progress;
    s.since = Clock::now();
  }
}

void progress() {
  auto& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.depth > 0 && s.by_progress) s.since = Clock::now();
}

Scope::~Scope() {
  auto& s = state();
  if (!counted_) return;
  std::lock_guard<std::mutex> lock(s.mu);
  --s.depth;
}

void maybe_injected_sleep(long step) {
  static const std::optional<FaultSpec> spec = fault_spec("MINI5D_FAULT_SLEEP", true);
  if (spec && spec->rank == state().rank && spec->step == step)
    std::this_thread::sleep_for(std::chrono::duration<double>(spec->seconds));
}

}  // namespace mini5d::comm::watchdog
