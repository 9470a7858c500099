// SPDX-License-Identifier: BSD-3-Clause
// The report reads a run record and nothing else (train/run_record.hpp): records made
// by hand, with no trainer, MPI communicator or model behind them, give the FOM's
// statistic and validity, the header's set-up lines and the JSON outcome.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <sstream>

#include "mini5d/report/report.hpp"

using namespace mini5d;

namespace {
train::RunRecord record_of(std::vector<double> losses, std::vector<double> tokens_per_s) {
  train::RunRecord r;
  for (std::size_t i = 0; i < losses.size(); ++i) {
    train::StepStats st;
    st.step = long(i) + 1;
    st.loss = losses[i];
    st.grad_norm = 1.0;
    st.tokens_per_s = tokens_per_s[i];
    r.history.push_back(st);
  }
  return r;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }
}  // namespace

TEST_CASE("the FOM's median leaves out the first step", "[report]") {
  // Step 1 (warm-up) is the slowest by far and must not count; the median of an even
  // count is the mean of the two middle values.
  CHECK(report::median_tokens_per_s(record_of({4, 3, 2, 1}, {1, 30, 10, 20})) == 20.0);
  CHECK(report::median_tokens_per_s(record_of({4, 3, 2, 1, 0.5}, {1, 30, 10, 20, 40})) == 25.0);
  CHECK(report::median_tokens_per_s(record_of({4}, {7})) == 7.0);  // one step: it counts
  CHECK(report::median_tokens_per_s(train::RunRecord{}) == 0.0);
}

TEST_CASE("the FOM is valid only for a run that trained", "[report]") {
  const auto good = record_of({4, 3, 2}, {1, 1, 1});
  CHECK(report::fom_valid(good));
  CHECK_FALSE(report::fom_valid(train::RunRecord{}));  // no step
  CHECK_FALSE(report::fom_valid(record_of({4, 3, 4}, {1, 1, 1})));  // the loss did not fall
  auto skipped = good;
  skipped.history[1].skipped = true;
  CHECK_FALSE(report::fom_valid(skipped));
  auto halted = good;
  halted.halted = "step 3: loss spike";
  CHECK_FALSE(report::fom_valid(halted));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  CHECK_FALSE(report::fom_valid(record_of({4, nan, 2}, {1, 1, 1})));  // a NaN compares false
  auto bad_norm = good;
  bad_norm.history[0].grad_norm = HUGE_VAL;
  CHECK_FALSE(report::fom_valid(bad_norm));
}

TEST_CASE("the header and the JSON record come from the record's facts", "[report]") {
  auto r = record_of({4, 3}, {100, 200});
  r.facts.deck.origin = "hand-made.yaml";
  r.facts.layout.d = 2, r.facts.layout.t = 3;
  r.facts.grid = "DP(2)-PP(1)-CP(1)-EP(1)-TP(3) rank 0 coords (0,0,0,0,0)";
  r.facts.data = "a source described by hand";
  r.facts.mpi_buffers = "host buffers (by hand)";
  r.facts.parameters = 12345, r.facts.matmul_parameters = 12000;
  r.facts.tokens_per_step = 4096, r.facts.flops_per_token = 1e6;
  r.facts.zero_group = 2;
  r.memory.predicted_state.weights = 1024.0 * 1024, r.memory.measured_state.weights = 2 * 1024.0 * 1024;
  r.run_id = "run-by-hand";
  measure::Platform pf;
  std::ostringstream head;
  report::print_header(head, pf, r);
  INFO(head.str());
  CHECK(contains(head.str(), "layout DP(2)-PP(1)-CP(1)-EP(1)-TP(3), ZeRO 0 over the dense-gradient group of 2"));
  CHECK(contains(head.str(), "MPI buffers: host buffers (by hand)"));
  CHECK(contains(head.str(), "deck hand-made.yaml"));
  CHECK(contains(head.str(), "parameters 12345 (12000 in matrix products)"));
  CHECK(contains(head.str(), "x 4096 tokens"));
  CHECK(contains(head.str(), "data: a source described by hand"));
  CHECK(contains(head.str(), "weights 1.00 MiB / 2.00 MiB"));
  CHECK_FALSE(contains(head.str(), "pipeline:"));  // no pipeline in the facts
  const std::string json = report::report_json(pf, r);
  CHECK(contains(json, "\"run_id\": \"run-by-hand\""));
  CHECK(contains(json, "\"tokens_per_step\": 4096"));
  CHECK(contains(json, "\"grid\": \"DP(2)-PP(1)-CP(1)-EP(1)-TP(3) rank 0 coords (0,0,0,0,0)\""));
  CHECK(contains(json, "\"tokens_per_s\": 200"));  // step 2's: the first is left out
  CHECK(contains(json, "\"valid\": true"));
}
