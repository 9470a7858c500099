// SPDX-License-Identifier: BSD-3-Clause
// The goodput rule (rules/goodput.hpp) against a second, independent implementation: a
// Monte Carlo run of the job itself, failure by failure (Poisson failures from a fixed
// seed, restarts that can fail, saves that commit only when written), long enough that
// its ETTR is within a few tenths of a percent of the expectation. The closed form must
// agree within kBound, and every variant of it with one term dropped must not: the
// mutant figures are in docs/testing.md ("Goodput"), so the bound is known to be tight.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>

#include "compare.hpp"
#include "mini5d/rules/goodput.hpp"

using namespace mini5d;
using mini5d::test::floored_relative;

namespace {
constexpr double kBound = 0.01;  // relative, formula against the simulation

// The job's wall time, failure by failure, until `horizon_s`: the fraction of it whose
// steps survive (the live state's work at the end over the wall time).
double simulated_ettr(const goodput::Inputs& in, long long interval_steps, double horizon_s, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const double m = in.node_mtbf_s / double(in.nodes);
  auto next_gap = [&] {  // exponential by inversion: the engine is standard, the result portable
    const double u = double(rng() >> 11) * 0x1.0p-53;
    return -std::log1p(-u) * m;
  };
  const double tau = double(interval_steps) * in.step_s;
  const bool async = in.write_s > 0;
  double t = 0, fail = next_gap();
  double committed = 0, live = 0;  // work seconds in the last committed checkpoint, in memory
  bool pending = false;            // an asynchronous write in flight
  double pending_work = 0, pending_commit = 0;
  bool restarting = false;
  // Runs `len` seconds of one phase; false when a failure comes first (then the job is
  // back at its last committed checkpoint and must restart).
  auto run = [&](double len) {
    if (fail >= t + len) {
      t += len;
      return true;
    }
    t = fail;
    fail = t + next_gap();
    if (pending && pending_commit <= t) committed = pending_work;
    pending = false;
    live = committed;
    restarting = true;
    return false;
  };
  while (t < horizon_s) {
    if (restarting) {
      if (run(in.restart_s)) restarting = false;
      continue;
    }
    if (!run(tau)) continue;
    live += tau;
    if (pending) {  // the previous write must end before the next snapshot
      if (pending_commit > t && !run(pending_commit - t)) continue;
      committed = pending_work;
      pending = false;
    }
    if (!run(in.save_s)) continue;
    if (async) {
      pending = true;
      pending_work = live;
      pending_commit = t + in.write_s;
    } else {
      committed = live;
    }
  }
  return live / t;
}

// A stressed job, so that every term moves the ETTR by several times kBound: a job MTBF
// of 1000 s, a 100 s interval, a 10 s save, a 300 s restart.
goodput::Inputs stressed(double write_s) {
  goodput::Inputs in;
  in.step_s = 2;
  in.save_s = 10;
  in.write_s = write_s;
  in.restart_s = 300;
  in.node_mtbf_s = 8000;
  in.nodes = 8;
  return in;
}
constexpr long long kSteps = 50;
constexpr double kHorizon = 2e8;  // seconds: 2e5 failures

// The formula with one term dropped or simplified (docs/testing.md, "Goodput").
double ettr_without(const goodput::Inputs& in, long long k, const char* term) {
  const double m = in.job_mtbf_s(), tau = double(k) * in.step_s, c = in.save_s, w = in.write_s, r = in.restart_s;
  const std::string t = term;
  if (t == "restart") return (tau / m) / (std::expm1((tau + c) / m) * std::exp(w / m));
  if (t == "write") return (tau / m) / (std::expm1((tau + c) / m) * std::exp(r / m));
  if (t == "save") return (tau / m) / (std::expm1(tau / m) * std::exp((r + w) / m));
  if (t == "failures during restart") return (tau / m) / (std::expm1((tau + c) / m) * (1 + r / m) * std::exp(w / m));
  if (t == "wait for the write") return (tau / m) / (std::expm1((tau + c) / m) * std::exp((r + w) / m));
  // first order: cycles of tau + C, each failure costing R + W and half a cycle
  return tau / (tau + c) * (1 - (r + w + (tau + c) / 2) / m);
}
}  // namespace

TEST_CASE("goodput: the closed form matches a Monte Carlo run of the job, synchronous and asynchronous",
          "[goodput]") {
  struct Case {
    const char* name;
    double write_s;
    long long steps;
  };
  // The last case's write (150 s) outlasts the 100 s of steps it hides behind.
  for (const Case& c : {Case{"synchronous", 0, kSteps}, Case{"asynchronous", 40, kSteps},
                        Case{"asynchronous, write longer than the interval", 150, kSteps}}) {
    INFO(c.name);
    const goodput::Inputs in = stressed(c.write_s);
    const double sim = simulated_ettr(in, c.steps, kHorizon, 20260 + std::uint64_t(c.write_s));
    const double formula = goodput::ettr(in, c.steps);
    INFO("simulated " << sim << ", formula " << formula);
    CHECK(floored_relative(formula, sim, 0) <= kBound);
    // Each term is needed: without it the formula leaves the bound (those that exist here).
    for (const char* term : {"restart", "write", "save", "failures during restart", "wait for the write",
                             "first order"}) {
      const std::string t = term;
      if ((t == "write" && c.write_s == 0) || (t == "wait for the write" && c.write_s <= kSteps * in.step_s))
        continue;
      const double mutant = ettr_without(in, c.steps, term);
      INFO("without " << term << ": " << mutant);
      CHECK(floored_relative(mutant, sim, 0) > kBound);
      CHECK(std::isfinite(mutant));
    }
  }
}

TEST_CASE("goodput: Young's interval is within 0.1% of the best ETTR at a realistic failure rate", "[goodput]") {
  // 16,384 GPUs on 2048 nodes, a node MTBF of 2.5 years, 10 s steps, a 30 s save.
  goodput::Inputs in;
  in.step_s = 10;
  in.save_s = 30;
  in.restart_s = 600;
  in.node_mtbf_s = 2.5 * 365 * 86400;
  in.nodes = 2048;
  const long long young = goodput::young_interval_steps(in);
  CHECK(young == std::llround(std::sqrt(2 * 30 * in.job_mtbf_s()) / 10));
  double best = 0;
  for (long long k = 1; k <= 20 * young; ++k) best = mini5d::test::worse(best, goodput::ettr(in, k));
  CHECK(floored_relative(goodput::ettr(in, young), best, 0) <= 1e-3);
  CHECK(goodput::ettr(in, young) > 0.5);
  CHECK(goodput::ettr(in, young) < 1);
}

TEST_CASE("goodput: bad inputs are named with their range", "[goodput]") {
  goodput::Inputs in = stressed(0);
  CHECK(goodput::invalid_field(in).empty());
  in.nodes = 0;
  CHECK(goodput::invalid_field(in) == "nodes: 0 is out of range (valid: an integer >= 1)");
  in = stressed(0);
  in.node_mtbf_s = std::nan("");
  CHECK(goodput::invalid_field(in) == "node_mtbf_s: nan is out of range (valid: seconds > 0)");
  in = stressed(0);
  in.step_s = -1;
  CHECK(goodput::invalid_field(in) == "step_s: -1 is out of range (valid: seconds > 0)");
}
