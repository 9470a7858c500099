// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/rules/pipeline_replay.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <tuple>

namespace mini5d::pp {

namespace {

// A rank's compute actions, all the replay needs of its schedule: 8 bytes each.
struct Step {
  std::int32_t mb;
  std::uint32_t vs : 31;
  std::uint32_t forward : 1;
};
using Lists = std::vector<std::vector<Step>>;

// The planner replays thousands of candidate layouts that share a few hundred
// (kind, p, v, m): their schedules are made once. The set is emptied when it holds
// more than kMemoSteps actions (8 bytes each, 128 MB): a bound on actions, not entries.
// A search of llama3-405b on 16384 devices meets 304 keys of 9.7 M actions in all; at
// 4 M the set was emptied 10 times and 1405 schedules were made, a third of the search.
constexpr std::size_t kMemoSteps = std::size_t(1) << 24;

std::shared_ptr<const Lists> compute_lists(const Spec& s) {
  using Key = std::tuple<int, int, int, int>;
  static std::map<Key, std::shared_ptr<const Lists>> memo;
  static std::size_t held = 0;  // actions in memo
  static std::mutex lock;
  const Key key{int(s.kind), s.p, s.v, s.m};
  {
    std::lock_guard<std::mutex> guard(lock);
    if (auto it = memo.find(key); it != memo.end()) return it->second;
  }
  auto lists = std::make_shared<Lists>(std::size_t(s.p));
  for (int r = 0; r < s.p; ++r) {
    auto& list = (*lists)[std::size_t(r)];
    list.reserve(2 * std::size_t(s.m) * std::size_t(s.v));  // a forward and a backward per micro-batch and chunk
    for (const Action& a : schedule(s, r))
      if (a.compute())
        list.push_back({a.mb, std::uint32_t(virtual_stage(s, r, a.chunk)), a.op == Op::forward ? 1u : 0u});
  }
  std::size_t steps = 0;
  for (const auto& l : *lists) steps += l.size();
  std::lock_guard<std::mutex> guard(lock);
  if (held + steps > kMemoSteps) memo.clear(), held = 0;
  if (memo.emplace(key, lists).second) held += steps;
  return lists;
}

}  // namespace

Replay replay(const Spec& s, const std::vector<double>& forward, const std::vector<double>& backward) {
  const int P = s.p * s.v;
  if (int(forward.size()) != P || int(backward.size()) != P)
    throw std::invalid_argument("pp::replay: one forward and one backward cost per virtual stage");
  // Only the compute actions matter: a receive is the wait for its producer's compute.
  const std::shared_ptr<const Lists> lists = compute_lists(s);
  // done[(mb, vs)]: when that forward (backward) ended, negative while it has not run.
  const auto at = [&](int mb, int vs) { return std::size_t(mb) * std::size_t(P) + std::size_t(vs); };
  std::vector<double> fwd_done(std::size_t(s.m) * std::size_t(P), -1.0), bwd_done(fwd_done);
  Replay out;
  out.busy.assign(std::size_t(s.p), 0.0);
  out.end.assign(std::size_t(s.p), 0.0);
  // Each rank runs until an input is missing; finishing an action wakes the rank that
  // consumes it (the next virtual stage's for a forward, the previous one's for a
  // backward), so every action is looked at a bounded number of times.
  std::vector<std::size_t> next(std::size_t(s.p), 0);
  std::vector<int> work(std::size_t(s.p));
  for (int r = 0; r < s.p; ++r) work[std::size_t(r)] = s.p - 1 - r;  // rank 0 first
  const auto rank_of = [&](int vs) { return vs % s.p; };
  while (!work.empty()) {
    const int r = work.back();
    work.pop_back();
    auto& i = next[std::size_t(r)];
    const auto& list = (*lists)[std::size_t(r)];
    double& clock = out.end[std::size_t(r)];
    for (; i < list.size(); ++i) {
      const Step& a = list[i];
      // The input this action waits for: the previous virtual stage's forward, or the
      // next one's backward (the last stage's backward follows its own forward).
      double ready = 0;
      if (a.forward && a.vs > 0) ready = fwd_done[at(a.mb, a.vs - 1)];
      if (!a.forward) ready = a.vs + 1 < P ? bwd_done[at(a.mb, a.vs + 1)] : fwd_done[at(a.mb, a.vs)];
      if (ready < 0) break;  // its producer has not run: its rank wakes this one
      const double cost = (a.forward ? forward : backward)[a.vs];
      clock = std::max(ready, clock) + cost;
      (a.forward ? fwd_done : bwd_done)[at(a.mb, a.vs)] = clock;
      out.busy[std::size_t(r)] += cost;
      const int consumer = a.forward ? (a.vs + 1 < P ? rank_of(a.vs + 1) : -1) : (a.vs > 0 ? rank_of(a.vs - 1) : -1);
      if (consumer >= 0 && consumer != r) work.push_back(consumer);
    }
  }
  // A valid schedule runs to its end; an action never run would mean a deadlock in it.
  for (int r = 0; r < s.p; ++r)
    if (next[std::size_t(r)] != (*lists)[std::size_t(r)].size())
      throw std::logic_error("pp::replay: the schedule deadlocks");
  out.span = *std::max_element(out.end.begin(), out.end.end());
  return out;
}

double replay_lower_bound(const Spec& s, const std::vector<double>& forward, const std::vector<double>& backward) {
  std::vector<double> busy(std::size_t(s.p), 0.0);
  for (std::size_t vs = 0; vs < forward.size(); ++vs) busy[vs % std::size_t(s.p)] += forward[vs] + backward[vs];
  double before = 0, bound = 0;  // before: micro-batch 0's way to virtual stage r, and back
  for (int r = 0; r < s.p; ++r) {
    bound = std::max(bound, before + s.m * busy[std::size_t(r)]);
    before += forward[std::size_t(r)] + backward[std::size_t(r)];
  }
  return bound;
}

std::vector<double> modelled_bubbles(const Spec& s, const std::vector<double>& cost) {
  std::vector<double> twice(cost);
  for (double& c : twice) c *= 2;
  const Replay r = replay(s, cost, twice);
  std::vector<double> out(std::size_t(s.p));
  for (int i = 0; i < s.p; ++i) out[std::size_t(i)] = r.bubble(i);
  return out;
}

}  // namespace mini5d::pp
