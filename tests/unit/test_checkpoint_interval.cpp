// SPDX-License-Identifier: BSD-3-Clause
// checkpoint.every=auto: the deck field (auto or a number; auto needs a node MTBF), the
// interval from its figures (Young's rule, rules/goodput.hpp), and the schedule that
// derives it after the timed step and again after the first save, from agreed figures.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "mini5d/core/deck.hpp"
#include "mini5d/core/error.hpp"
#include "mini5d/train/checkpoint_interval.hpp"
#include "mini5d/train/trainer.hpp"

using namespace mini5d;
using Catch::Matchers::Contains;

namespace {
std::string error_of(const std::string& yaml, const std::vector<std::string>& overrides = {}) {
  try {
    parse_deck(yaml, "t.yaml", overrides);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

train::CheckpointEvent save_event(long step, double bytes, double seconds) {
  train::CheckpointEvent e;
  e.kind = "save";
  e.path = "step.h5";
  e.reason = "every";
  e.step = step;
  e.bytes = bytes;
  e.seconds = seconds;
  return e;
}
}  // namespace

TEST_CASE("checkpoint.every is auto or a number of steps; auto needs checkpoint.node_mtbf_hours", "[deck]") {
  const Deck a = parse_deck("checkpoint:\n  every: auto\n  node_mtbf_hours: 5000\n", "t.yaml");
  CHECK(a.checkpoint.every_auto);
  CHECK(a.checkpoint.every == 0);
  CHECK(a.checkpoint.node_mtbf_hours == 5000);
  CHECK_THAT(a.to_yaml(), Contains("  every: auto\n  node_mtbf_hours: 5000\n"));
  CHECK_THAT(a.to_json(), Contains("\"every\": \"auto\", \"node_mtbf_hours\": 5000"));
  CHECK(parse_deck(a.to_yaml(), "round trip").to_yaml() == a.to_yaml());
  const Deck n = parse_deck("checkpoint:\n  every: 25\n", "t.yaml");
  CHECK(!n.checkpoint.every_auto);
  CHECK(n.checkpoint.every == 25);
  CHECK_THAT(n.to_json(), Contains("\"every\": 25,"));
  // The command line's auto, and a number again over a deck's auto.
  CHECK(parse_deck("", "t.yaml", {"checkpoint.every=auto", "checkpoint.node_mtbf_hours=0.01"}).checkpoint.every_auto);
  CHECK(!parse_deck("checkpoint:\n  every: auto\n", "t.yaml", {"checkpoint.every=7"}).checkpoint.every_auto);

  CHECK_THAT(error_of("checkpoint:\n  every: auto\n"),
             Contains("t.yaml: checkpoint.every: auto needs checkpoint.node_mtbf_hours > 0 (one node's mean time "
                      "between failures, in hours)"));
  CHECK_THAT(error_of("", {"checkpoint.every=auto"}), Contains("command line: checkpoint.every: auto needs"));
  CHECK_THAT(error_of("checkpoint:\n  every: sometimes\n"),
             Contains("t.yaml:2: checkpoint.every: expected auto or an integer in [0, 1000000000000], got \"sometimes\""));
  CHECK_THAT(error_of("checkpoint:\n  every: -3\n"),
             Contains("t.yaml:2: checkpoint.every: expected auto or an integer in [0, 1000000000000], got \"-3\""));
  const std::string neg = error_of("checkpoint:\n  every: auto\n  node_mtbf_hours: -1\n");
  CHECK_THAT(neg, Contains("t.yaml:3: checkpoint.node_mtbf_hours: expected a number in [0, 1e+09], got \"-1\""));
  CHECK_THAT(neg, !Contains("auto needs"));  // the failed field's own line, not a second about it
  CHECK_THAT(deck_help(), Contains("  every (auto or an integer in [0, 1000000000000]; default 0)"));
}

TEST_CASE("the automatic interval is Young's, in whole steps, and its line names its inputs", "[checkpoint]") {
  train::IntervalFigures f;
  f.step_s = 10.2;
  f.save_bytes = 4.87e12;
  f.save_s = f.save_bytes / train::kAssumedSaveBytesPerSecond;  // 4870 s
  f.node_mtbf_hours = 24.72;
  f.nodes = 8;
  // sqrt(2 x 4870 x 3.09 h x 3600) = 10,434 s, at 10.2 s/step: 1023 steps.
  const double want_s = std::sqrt(2 * 4870.0 * 24.72 / 8 * 3600);
  CHECK(train::auto_interval_steps(f) == std::lround(want_s / 10.2));
  CHECK(train::interval_line(f, 1023) ==
        "checkpoint.every auto: every 1023 steps (Young: sqrt(2 x C 4.87e+03 s x M 3.09 h) = 1.04e+04 s at 10.2 "
        "s/step; M = 24.7 h / 8 nodes; C estimated from 4.87 TB at 1 GB/s)");
  f.save_measured = true;
  f.measured_at = 1023;
  CHECK_THAT(train::interval_line(f, 1), Contains("every 1 step (") && Contains("C measured at the save after step 1023, 4.87 TB)"));
  // Never under one step, however cheap the save.
  f.save_s = 0;
  CHECK(train::auto_interval_steps(f) == 1);
}

TEST_CASE("the schedule: a fixed interval from step 0; auto after the timed step, again after the first save",
          "[checkpoint]") {
  CheckpointConfig fixed;
  fixed.every = 4;
  train::CheckpointSchedule every4(fixed, 2, 1, 0, {}, {});
  CHECK(!every4.due(3, 1.0));
  CHECK(every4.due(4, 1.0));  // step 4 of the run, not 4 after the resume at 2
  CHECK(every4.reason() == "every 4 steps");

  CheckpointConfig ck;
  ck.every_auto = true;
  ck.node_mtbf_hours = 1;  // M = 3600 s on one node
  std::vector<std::string> lines;
  std::vector<double> agreed;
  // Another rank was slower: the agreement gives its figure, which every rank then rounds.
  auto agree = [&](double v) {
    agreed.push_back(v);
    return 2 * v;
  };
  train::CheckpointSchedule s(ck, 0, 1, 2e9, agree, [&](const std::string& l) { lines.push_back(l); });
  CHECK(!s.due(1, 100.0));  // the first step warms up: no interval yet
  CHECK(lines.empty());
  // C = 2 s (2 GB at 1 GB/s), step 2 x 0.6 s: sqrt(2 x 2 x 3600) = 120 s = 100 steps.
  CHECK(!s.due(2, 0.6));
  CHECK(agreed == std::vector<double>{0.6});
  CHECK(s.interval() == 100);
  REQUIRE(lines.size() == 1);
  CHECK_THAT(lines[0], Contains("every 100 steps") && Contains("C estimated from 2 GB at 1 GB/s"));
  CHECK(!s.due(99, 5.0));
  CHECK(s.due(100, 5.0));
  CHECK(s.reason() == "auto: every 100 steps");
  // The save took 0.125 s here, 0.25 s on the slowest rank: sqrt(2 x 0.25 x 3600) = 42.4 s = 35 steps.
  s.saved(save_event(100, 1.5e9, 0.125));
  CHECK(s.interval() == 35);
  REQUIRE(lines.size() == 2);
  CHECK_THAT(lines[1], Contains("every 35 steps") && Contains("C measured at the save after step 100, 1.5 GB"));
  CHECK(!s.due(134, 5.0));
  CHECK(s.due(135, 5.0));  // counted from the last save
  s.saved(save_event(135, 1.5e9, 9.0));
  CHECK(s.interval() == 35);  // derived once: later saves do not move it
  CHECK(lines.size() == 2);
  CHECK(agreed.size() == 2);  // and agree on nothing more
}

TEST_CASE("an asynchronous save costs training its snapshot and its wait, not its write", "[checkpoint]") {
  train::CheckpointEvent e = save_event(10, 1e9, 30.0);  // the background write took 30 s
  CHECK(train::blocking_save_seconds(e) == 30.0);        // as a blocking save: all of it
  e.async = true;
  e.snapshot_seconds = 0.1;
  e.wait_seconds = 0.15;
  CHECK(train::blocking_save_seconds(e) == Approx(0.25));
}
