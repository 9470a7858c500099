// SPDX-License-Identifier: BSD-3-Clause
// Emitted deck, Slurm script and JSON: structure checks (bash -n runs as a CTest
// script, see emit_check.cmake).
#include <catch2/catch.hpp>
#include <yaml-cpp/yaml.h>

#include <array>
#include <cmath>
#include <sstream>

#include "mini5d/plan/output/emit_deck.hpp"
#include "mini5d/plan/output/emit_slurm.hpp"
#include "mini5d/plan/output/explain.hpp"
#include "mini5d/plan/output/json.hpp"
#include "mini5d/plan/output/report.hpp"
#include "mini5d/plan/validation/sanity_notes.hpp"
#include "mini5d/plan/output/signal_margin.hpp"
#include "plan_test_util.hpp"

using namespace mini5d::plan;

namespace {
// Every section and field of tiny.yaml must be in `deck`.
void check_tiny_structure(const YAML::Node& deck) {
  const YAML::Node tiny = YAML::LoadFile(plan_test::input("tiny.yaml"));
  for (auto sec = tiny.begin(); sec != tiny.end(); ++sec) {
    const std::string name = sec->first.Scalar();
    INFO("section " << name);
    REQUIRE(deck[name]);
    REQUIRE(deck[name].IsMap());
    for (auto f = sec->second.begin(); f != sec->second.end(); ++f) {
      INFO("field " << name << "." << f->first.Scalar());
      CHECK(deck[name][f->first.Scalar()]);
    }
  }
}
}  // namespace

TEST_CASE("--emit-deck writes a deck with tiny.yaml's structure", "[plan][outputs]") {
  const auto [in, cl, o, r] = plan_test::search_top("models/dense-70b.yaml", "clusters/h100-sxm-8.yaml", 16, 2);
  REQUIRE(!r.top.empty());
  const Layout& l = r.top.front().layout;

  std::ostringstream full;
  write_deck(full, in, cl, r.top.front(), false);
  const YAML::Node deck = YAML::Load(full.str());
  check_tiny_structure(deck);
  CHECK(deck["model"]["d_model"].as<int>() == 8192);
  CHECK(deck["parallel"]["t"].as<int>() == l.t);
  CHECK(deck["parallel"]["p"].as<int>() == l.p);
  CHECK(deck["parallel"]["d"].as<int>() == l.d);
  CHECK(deck["parallel"]["zero"].as<int>() == l.zero);
  CHECK(deck["parallel"]["ranks_per_node"].as<int>() == 8);
  CHECK(deck["train"]["micro_batch"].as<int>() == l.micro_batch);
  CHECK(deck["train"]["accumulation"].as<int>() == l.accumulation);
  CHECK(deck["train"]["recompute"].as<std::string>() == to_string(l.recompute));
  CHECK(!deck["train"]["global_batch"]);  // planner-only fields stay out

  std::ostringstream small;
  write_deck(small, in, cl, r.top.front(), true);
  const YAML::Node sd = YAML::Load(small.str());
  check_tiny_structure(sd);
  for (const char* a : {"d", "t", "p", "c", "e"}) CHECK(sd["parallel"][a].as<int>() == 1);
  CHECK(sd["model"]["d_model"].as<int>() % sd["model"]["heads"].as<int>() == 0);
  CHECK(sd["model"]["d_model"].as<int>() <= 64);

  // A deck in, a deck out: its train/data/output values are carried over.
  const ModelInput tiny = load_model_file(plan_test::data("deck_small.yaml"));
  ClusterDesc cpu = load_cluster_file(plan_test::input("clusters/cpu-2core.yaml"));
  TrainDesc tr = tiny.train;
  tr.global_batch = 16;
  const SearchResult rt = search(tiny.model, tr, cpu, {});
  REQUIRE(!rt.top.empty());
  std::ostringstream td;
  write_deck(td, tiny, cpu, rt.top.front(), false);
  const YAML::Node tdn = YAML::Load(td.str());
  check_tiny_structure(tdn);
  CHECK(tdn["train"]["lr"].as<std::string>() == "3.0e-3");
  CHECK(tdn["data"]["markov_branching"].as<int>() == 3);
  CHECK(tdn["parallel"]["d"].as<int>() * tdn["train"]["micro_batch"].as<int>() *
            tdn["train"]["accumulation"].as<int>() ==
        16);
  CHECK(!tdn["model"]["positions"]);  // learned, the default, is left out
  // Rotary positions travel with the deck, and a base other than 10000 with them.
  ModelInput rope = tiny;
  rope.model.positions = Positions::rope;
  rope.model.rope_theta = 500000.5;
  std::ostringstream rd;
  write_deck(rd, rope, cpu, rt.top.front(), false);
  const YAML::Node rdn = YAML::Load(rd.str());
  CHECK(rdn["model"]["positions"].as<std::string>() == "rope");  // deck-string: the emitted deck's text
  CHECK(rdn["model"]["rope_theta"].as<double>() == 500000.5);
}

TEST_CASE("--emit-slurm and --json carry the plan", "[plan][outputs]") {
  const auto [in, cl, o, r] =
      plan_test::search_top("models/dense-70b.yaml", "clusters/perlmutter-a100-4.yaml", 32, 3);
  REQUIRE(!r.top.empty());
  std::ostringstream sh;
  write_slurm(sh, in.model, cl, r.top.front(), "plan.yaml");
  const std::string s = sh.str();
  CHECK(s.rfind("#!/bin/bash\n", 0) == 0);
  CHECK(s.find("#SBATCH --nodes=32\n") != std::string::npos);
  CHECK(s.find("#SBATCH --ntasks=") == std::string::npos);  // whole nodes: --nodes alone scales it
  CHECK(s.find("#SBATCH --ntasks-per-node=4\n") != std::string::npos);
  CHECK(s.find("#SBATCH --cpus-per-task=32\n") != std::string::npos);  // 16 cores x 2 hardware threads
  CHECK(s.find("#SBATCH --gpus-per-task=1\n") != std::string::npos);
  CHECK(s.find("--ntasks=$SLURM_NTASKS ") != std::string::npos);
  const SignalMargin sm = signal_margin(in.model, cl, r.top.front().time.step, 32);
  CHECK(s.find("#SBATCH --signal=USR1@" + std::to_string(sm.seconds) + "\n") != std::string::npos);

  std::ostringstream js;
  write_json(js, in.model, in.train, cl, r);
  const YAML::Node j = YAML::Load(js.str());  // JSON is YAML
  CHECK(j["schema"].as<std::string>() == "mini5d-plan/1");
  REQUIRE(j["plans"].size() == 3);
  CHECK(j["plans"][0]["layout"]["t"].as<int>() == r.top.front().layout.t);
  CHECK(j["plans"][0]["time_s"]["step"].as<double>() == Approx(r.top.front().time.step));

  std::ostringstream ex;
  explain(ex, in.model, in.train, cl, r, o);
  CHECK(ex.str().find("t=" + std::to_string(r.top.front().layout.t) + ": ") != std::string::npos);
  CHECK(ex.str().find("runner-up") != std::string::npos);
}

TEST_CASE("the time-limit warning covers a step, the checkpoint at the file system's rate and the exit",
          "[plan][outputs]") {
  ClusterDesc cl = load_cluster_file(plan_test::input("clusters/perlmutter-a100-4.yaml"));
  const ModelDesc m = load_model_file(plan_test::input("models/dense-70b.yaml")).model;
  const double bytes = count_params(m).total * 12;  // fp32 master + two AdamW moments
  // 32 nodes x 10 GB/s per node, under the file system's 5000 GB/s.
  SignalMargin a = signal_margin(m, cl, 12.5, 32);
  CHECK(a.checkpoint_bytes == Approx(bytes));
  CHECK(a.write_bytes_per_s == Approx(320e9));
  CHECK(a.save_s == Approx(bytes / 320e9));
  CHECK(a.seconds == static_cast<long long>(std::ceil((12.5 + bytes / 320e9 + kExitAllowanceSeconds) / 10)) * 10);
  // 1000 nodes: the file system's limit, not the nodes', sets the rate.
  CHECK(signal_margin(m, cl, 12.5, 1000).write_bytes_per_s == Approx(5000e9));
  // No rate stated: the save cannot be sized; two minutes at least, and said.
  cl.fs_write_gbs = cl.fs_write_gbs_per_node = 0;
  SignalMargin b = signal_margin(m, cl, 12.5, 32);
  CHECK(b.seconds == 120);
  CHECK_THAT(b.why, Catch::Contains("not sized"));
  CHECK(signal_margin(m, cl, 300, 32).seconds == 360);
  // A limit shorter than the warning is refused, naming slurm.time.
  cl.slurm_time = "5";
  CHECK_THROWS_WITH(signal_margin(m, cl, 300, 32), Catch::Contains("slurm.time: '5' (300 s) leaves no time"));
  CHECK(slurm_time_seconds("01:00:00") == 3600);
  CHECK(slurm_time_seconds("2-00:30:05") == 2 * 86400 + 1805);
  CHECK(slurm_time_seconds("90") == 5400);
}

TEST_CASE("--emit-slurm asks for exactly the plan's ranks when it is not whole nodes", "[plan][outputs]") {
  // 4 GPUs per node: a 2-rank plan used to ask for 4 tasks on its node, and a 6-rank
  // plan for 8 on two, so srun started more ranks than the deck's layout holds.
  auto [in, cl, o, r] = plan_test::search_top("models/dense-70b.yaml", "clusters/perlmutter-a100-4.yaml", 32, 1);
  REQUIRE(!r.top.empty());
  for (const auto& [d, nodes, per_node] : {std::array<long long, 3>{2, 1, 2}, std::array<long long, 3>{6, 2, 4}}) {
    Plan p = r.top.front();
    p.layout = Layout{};
    p.layout.d = static_cast<int>(d);
    std::ostringstream sh;
    write_slurm(sh, in.model, cl, p, "plan.yaml");
    const std::string s = sh.str();
    CHECK(s.find("#SBATCH --nodes=" + std::to_string(nodes) + "\n") != std::string::npos);
    CHECK(s.find("#SBATCH --ntasks=" + std::to_string(d) + "\n") != std::string::npos);
    CHECK(s.find("#SBATCH --ntasks-per-node=" + std::to_string(per_node) + "\n") != std::string::npos);
  }
}

TEST_CASE("sanity notes: a position table that dominates, a step above an hour", "[plan][outputs]") {
  auto [in, cl, o, r] = plan_test::search_top("models/dense-70b.yaml", "clusters/perlmutter-a100-4.yaml", 32, 1);
  REQUIRE(!r.top.empty());
  // The model as published: no note.
  CHECK(sanity_notes(in.model, &r.top.front()).empty());
  // seq ten thousand times too long: the table (seq x d_model, 336 B parameters)
  // outweighs the 80 blocks (a thousand times, 34 B, is under half: no note).
  ModelDesc longer = in.model;
  longer.seq *= 1000;
  CHECK(sanity_notes(longer, nullptr).empty());
  longer.seq *= 10;
  const auto notes = sanity_notes(longer, nullptr);
  REQUIRE(notes.size() == 1);
  CHECK(notes[0].find("the learned position table (seq " + std::to_string(longer.seq)) != std::string::npos);
  // Rotary positions have no table: the same length draws no note.
  longer.positions = Positions::rope;
  CHECK(sanity_notes(longer, nullptr).empty());
  // A step of two hours.
  Plan slow = r.top.front();
  slow.time.step = 7200;
  const auto step_notes = sanity_notes(in.model, &slow);
  REQUIRE(step_notes.size() == 1);
  CHECK(step_notes[0].find("(2.0 h) per optimizer step") != std::string::npos);
}
