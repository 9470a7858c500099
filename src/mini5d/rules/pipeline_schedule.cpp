// SPDX-License-Identifier: BSD-3-Clause
#include "mini5d/rules/pipeline_schedule.hpp"

#include <algorithm>
#include <stdexcept>

namespace mini5d::pp {

const char* to_string(Op op) {
  switch (op) {
    case Op::recv_forward: return "recv_forward";
    case Op::forward: return "forward";
    case Op::send_forward: return "send_forward";
    case Op::recv_backward: return "recv_backward";
    case Op::backward: return "backward";
    case Op::send_backward: return "send_backward";
  }
  return "?";
}

std::string problem(const Spec& s) {
  if (s.p < 1 || s.v < 1 || s.m < 1) return "parallel.p, parallel.virtual_stages and train.accumulation must be >= 1";
  if (s.kind == Schedule::interleaved && s.v < 2)
    return "parallel.schedule=interleaved needs parallel.virtual_stages > 1 (got " + std::to_string(s.v) + ")";
  if (s.kind == Schedule::interleaved && s.m % s.p != 0)
    return "parallel.schedule=interleaved needs train.accumulation (micro-batches, " + std::to_string(s.m) +
           ") divisible by parallel.p=" + std::to_string(s.p);
  return "";
}

namespace {
// Megatron's interleaved forward/backward order with micro-batch groups of G.
struct Order {
  int p, v, m, G;
  int chunk(int k, bool forward) const {
    const int c = (k / G) % v;
    return forward ? c : v - 1 - c;
  }
  int mb(int k) const { return (k / (G * v)) * G + k % G; }
};
}  // namespace

std::vector<Action> schedule(const Spec& s, int stage) {
  if (auto why = problem(s); !why.empty()) throw std::invalid_argument("mini5d: " + why);
  if (stage < 0 || stage >= s.p) throw std::invalid_argument("mini5d: pipeline stage out of range");
  const int total = s.m * s.v;
  const Order o{s.p, s.v, s.m, s.kind == Schedule::interleaved ? s.p : s.m};
  int warmup = 0;
  if (s.kind == Schedule::gpipe)
    warmup = total;
  else if (s.v == 1)
    warmup = s.p - stage - 1;
  else
    warmup = 2 * (s.p - stage - 1) + (s.v - 1) * o.G;
  warmup = std::min(warmup, total);

  const int P = s.p * s.v;
  const int prev = (stage + s.p - 1) % s.p, next = (stage + 1) % s.p;
  std::vector<Action> out;
  out.reserve(6 * std::size_t(total));  // at most a receive, the compute and a send, each way
  auto forward = [&](int k) {
    const int c = o.chunk(k, true), mb = o.mb(k), vs = virtual_stage(s, stage, c);
    if (vs > 0) out.push_back({Op::recv_forward, mb, c, prev});
    out.push_back({Op::forward, mb, c, -1});
    if (vs < P - 1) out.push_back({Op::send_forward, mb, c, next});
  };
  auto backward = [&](int k) {
    const int c = o.chunk(k, false), mb = o.mb(k), vs = virtual_stage(s, stage, c);
    if (vs < P - 1) out.push_back({Op::recv_backward, mb, c, next});
    out.push_back({Op::backward, mb, c, -1});
    if (vs > 0) out.push_back({Op::send_backward, mb, c, prev});
  };
  int f = 0, b = 0;
  for (; f < warmup; ++f) forward(f);
  while (f < total) {  // steady state: one forward, one backward
    forward(f++);
    backward(b++);
  }
  while (b < total) backward(b++);  // cool-down
  return out;
}

double formula_bubble(const Spec& s) {
  const int v = s.kind == Schedule::interleaved || s.v > 1 ? s.v : 1;
  return double(s.p - 1) / double(v * s.m + s.p - 1);
}

int peak_in_flight(const std::vector<Action>& actions, int v, std::vector<int>* per_chunk) {
  std::vector<int> now(std::size_t(std::max(v, 1)), 0), peak(now.size(), 0);
  int all = 0, peak_all = 0;
  for (const auto& a : actions) {
    if (a.op == Op::forward) {
      ++all;
      peak[std::size_t(a.chunk)] = std::max(peak[std::size_t(a.chunk)], ++now[std::size_t(a.chunk)]);
    } else if (a.op == Op::backward) {
      --all;
      --now[std::size_t(a.chunk)];
    }
    peak_all = std::max(peak_all, all);
  }
  if (per_chunk) *per_chunk = peak;
  return peak_all;
}

long long peak_in_flight_weighted(const std::vector<Action>& actions, const std::vector<long long>& weights) {
  long long now = 0, peak = 0;
  for (const auto& a : actions) {
    if (a.op == Op::forward) now += weights.at(std::size_t(a.chunk));
    if (a.op == Op::backward) now -= weights.at(std::size_t(a.chunk));
    peak = std::max(peak, now);
  }
  return peak;
}

std::string describe(const Action& a) {
  const std::string ids = "mb" + std::to_string(a.mb) + " c" + std::to_string(a.chunk);
  switch (a.op) {
    case Op::forward: return "F" + std::to_string(a.mb) + " c" + std::to_string(a.chunk);
    case Op::backward: return "B" + std::to_string(a.mb) + " c" + std::to_string(a.chunk);
    case Op::recv_forward:
    case Op::recv_backward: return std::string(to_string(a.op)) + " " + ids + " from " + std::to_string(a.peer);
    default: return std::string(to_string(a.op)) + " " + ids + " to " + std::to_string(a.peer);
  }
}

}  // namespace mini5d::pp
