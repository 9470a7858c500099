// SPDX-License-Identifier: BSD-3-Clause
// The pipeline schedule generator without MPI (rules/pipeline_schedule.hpp): for each
// kind and several (p, v, m), every rank's list runs each micro-batch's forward and
// backward once per chunk, forward first; every send has its receive on the peer;
// and executing all the lists with unit costs (sends never block, a receive waits for
// its send) finishes without a deadlock and leaves every rank idle exactly the
// formula's share of the step.
#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "mini5d/rules/pipeline_schedule.hpp"

using namespace mini5d::pp;
using mini5d::Schedule;

namespace {
struct Sim {
  bool finished = false;
  double makespan = 0;
  std::vector<double> busy;
};

// Runs every rank's list in order. A forward costs f, a backward b; a receive waits
// until its message was sent. Messages are keyed by (direction, micro-batch, receiving
// virtual stage).
Sim simulate(const Spec& s, double f = 1, double b = 1) {
  std::vector<std::vector<Action>> lists;
  for (int r = 0; r < s.p; ++r) lists.push_back(schedule(s, r));
  std::vector<std::size_t> at(std::size_t(s.p), 0);
  std::vector<double> clock(std::size_t(s.p), 0);
  std::map<std::tuple<int, int, int>, double> sent;
  Sim out;
  out.busy.assign(std::size_t(s.p), 0);
  for (bool moved = true; moved;) {
    moved = false;
    for (int r = 0; r < s.p; ++r) {
      auto& list = lists[std::size_t(r)];
      auto& i = at[std::size_t(r)];
      auto& t = clock[std::size_t(r)];
      while (i < list.size()) {
        const Action& a = list[i];
        const int vs = virtual_stage(s, r, a.chunk);
        if (a.op == Op::recv_forward || a.op == Op::recv_backward) {
          const auto it = sent.find({a.op == Op::recv_forward ? 0 : 1, a.mb, vs});
          if (it == sent.end()) break;  // blocked
          t = std::max(t, it->second);
        } else if (a.op == Op::send_forward) {
          sent[{0, a.mb, vs + 1}] = t;
        } else if (a.op == Op::send_backward) {
          sent[{1, a.mb, vs - 1}] = t;
        } else {
          const double c = a.op == Op::forward ? f : b;
          t += c;
          out.busy[std::size_t(r)] += c;
        }
        ++i;
        moved = true;
      }
    }
  }
  out.finished = true;
  for (int r = 0; r < s.p; ++r) {
    out.finished = out.finished && at[std::size_t(r)] == lists[std::size_t(r)].size();
    out.makespan = std::max(out.makespan, clock[std::size_t(r)]);
  }
  return out;
}

std::vector<Spec> specs() {
  std::vector<Spec> out;
  for (Schedule k : {Schedule::gpipe, Schedule::one_f_one_b, Schedule::interleaved})
    for (int p : {1, 2, 3, 4, 8})
      for (int v : {1, 2, 3})
        for (int m : {1, 2, 3, 4, 6, 8, 16}) {
          const Spec s{k, p, v, m};
          if (problem(s).empty()) out.push_back(s);
        }
  return out;
}

std::string name(const Spec& s) {
  return std::string(to_string(s.kind)) + " p" + std::to_string(s.p) + " v" + std::to_string(s.v) + " m" +
         std::to_string(s.m);
}
}  // namespace

TEST_CASE("each micro-batch runs forward then backward once per chunk", "[pp][schedule]") {
  for (const Spec& s : specs())
    for (int r = 0; r < s.p; ++r) {
      INFO(name(s) << " stage " << r);
      std::map<std::pair<int, int>, int> f_at, b_at;
      int forwards = 0, backwards = 0, sends = 0, recvs = 0;
      const auto list = schedule(s, r);
      for (int i = 0; i < int(list.size()); ++i) {
        const Action& a = list[std::size_t(i)];
        REQUIRE(a.mb >= 0);
        REQUIRE(a.mb < s.m);
        REQUIRE(a.chunk >= 0);
        REQUIRE(a.chunk < s.v);
        if (a.op == Op::forward) {
          ++forwards;
          CHECK(f_at.emplace(std::make_pair(a.mb, a.chunk), i).second);
        } else if (a.op == Op::backward) {
          ++backwards;
          CHECK(b_at.emplace(std::make_pair(a.mb, a.chunk), i).second);
          const auto fw = f_at.find({a.mb, a.chunk});
          CHECK(fw != f_at.end());  // its forward came first
        } else if (a.op == Op::send_forward || a.op == Op::send_backward) {
          ++sends;
        } else {
          ++recvs;
        }
      }
      CHECK(forwards == s.m * s.v);
      CHECK(backwards == s.m * s.v);
      // Each chunk's forward receives unless it is virtual stage 0 and sends unless it
      // is the last one; backwards the other way round.
      int edges = 0;
      for (int c = 0; c < s.v; ++c) {
        const int vs = virtual_stage(s, r, c);
        edges += (vs > 0 ? 1 : 0) + (vs < s.p * s.v - 1 ? 1 : 0);
      }
      CHECK(sends == s.m * edges);
      CHECK(recvs == s.m * edges);
    }
}

TEST_CASE("every send has its receive on the peer, and receives come in send order", "[pp][schedule]") {
  for (const Spec& s : specs()) {
    INFO(name(s));
    // (direction, micro-batch, from virtual stage, to virtual stage) -> count
    std::map<std::tuple<int, int, int, int>, int> sends, recvs;
    for (int r = 0; r < s.p; ++r)
      for (const Action& a : schedule(s, r)) {
        const int vs = virtual_stage(s, r, a.chunk);
        if (a.op == Op::send_forward) {
          CHECK(a.peer == (r + 1) % s.p);
          ++sends[{0, a.mb, vs, vs + 1}];
        } else if (a.op == Op::recv_forward) {
          CHECK(a.peer == (r + s.p - 1) % s.p);
          ++recvs[{0, a.mb, vs - 1, vs}];
        } else if (a.op == Op::send_backward) {
          CHECK(a.peer == (r + s.p - 1) % s.p);
          ++sends[{1, a.mb, vs, vs - 1}];
        } else if (a.op == Op::recv_backward) {
          CHECK(a.peer == (r + 1) % s.p);
          ++recvs[{1, a.mb, vs + 1, vs}];
        }
      }
    CHECK(sends == recvs);
    for (const auto& [k, n] : sends) CHECK(n == 1);
  }
}

TEST_CASE("unit costs give exactly the formula's bubble, with no deadlock", "[pp][schedule]") {
  for (const Spec& s : specs()) {
    INFO(name(s));
    const Sim sim = simulate(s);
    REQUIRE(sim.finished);
    // The formula holds for one chunk per rank at any m, and with v chunks once m >= p
    // (interleaved always has m a multiple of p).
    if (s.v > 1 && s.m < s.p) continue;
    for (int r = 0; r < s.p; ++r) {
      const double bubble = 1.0 - sim.busy[std::size_t(r)] / sim.makespan;
      INFO("stage " << r << ": bubble " << bubble << ", formula " << formula_bubble(s));
      CHECK(std::abs(bubble - formula_bubble(s)) < 1e-12);
    }
  }
}

TEST_CASE("forward and backward of different costs keep the formula (GPipe, 1F1B)", "[pp][schedule]") {
  for (Schedule k : {Schedule::gpipe, Schedule::one_f_one_b})
    for (int p : {2, 4})
      for (int m : {1, 4, 8}) {
        const Spec s{k, p, 1, m};
        const Sim sim = simulate(s, 1, 2);
        REQUIRE(sim.finished);
        for (int r = 0; r < p; ++r)
          CHECK(std::abs(1.0 - sim.busy[std::size_t(r)] / sim.makespan - formula_bubble(s)) < 1e-12);
      }
}

TEST_CASE("in-flight micro-batches: m for GPipe, p - stage for 1F1B, Megatron's warm-up + 1 interleaved",
          "[pp][schedule]") {
  for (int p : {2, 4})
    for (int m : {1, 2, 4, 8})
      for (int r = 0; r < p; ++r) {
        CHECK(peak_in_flight(schedule({Schedule::gpipe, p, 1, m}, r), 1) == m);
        CHECK(peak_in_flight(schedule({Schedule::one_f_one_b, p, 1, m}, r), 1) == std::min(m, p - r));
        if (m % p == 0)
          CHECK(peak_in_flight(schedule({Schedule::interleaved, p, 2, m}, r), 2) ==
                std::min(2 * m, 2 * (p - r - 1) + p + 1));
      }
}

TEST_CASE("1F1B's list for p = 4, m = 6 on stage 1, as a reader would write it", "[pp][schedule]") {
  std::string got;
  for (const Action& a : schedule({Schedule::one_f_one_b, 4, 1, 6}, 1))
    if (a.compute()) got += describe(a).substr(0, describe(a).find(' ')) + " ";
  CHECK(got == "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 B4 B5 ");
}

TEST_CASE("bad schedules are refused naming the fields", "[pp][schedule]") {
  CHECK(problem({Schedule::interleaved, 2, 1, 4}).find("parallel.virtual_stages") != std::string::npos);
  CHECK(problem({Schedule::interleaved, 4, 2, 6}).find("train.accumulation") != std::string::npos);
  CHECK(problem({Schedule::interleaved, 2, 2, 4}).empty());
  CHECK_THROWS(schedule({Schedule::interleaved, 2, 1, 4}, 0));
  Schedule unknown = Schedule::gpipe;
  CHECK_FALSE(mini5d::parse_choice("zb", unknown));  // the deck refuses it first
}
