// SPDX-License-Identifier: BSD-3-Clause
// Reliability, one rank: a diverging run skips non-finite steps, stops, and
// never leaves a non-finite checkpoint; retention spares another run's files; a second
// lock on a checkpoint directory is refused; decks that are empty or a directory are
// refused; strings with control characters survive YAML and JSON.
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>

#include "mini5d/checkpoint/checkpoint.hpp"
#include "mini5d/checkpoint/run_identity.hpp"
#include "mini5d/checkpoint/run_lock.hpp"
#include "mini5d/core/deck.hpp"
#include "mini5d/core/error.hpp"
#include "mini5d/core/json_text.hpp"
#include "mini5d/train/step_guard.hpp"
#include "mini5d/train/trainer.hpp"
#include "input_error.hpp"

using namespace mini5d;
namespace fs = std::filesystem;
using test::input_error;

namespace {
const std::string kTiny = std::string(MINI5D_SOURCE_DIR) + "/inputs/tiny.yaml";

std::string fresh_dir(const std::string& name) {
  const std::string dir = (fs::current_path() / "reliability_test" / name).string();
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}


bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }
}  // namespace

TEST_CASE("step guard: non-finite steps are skipped, too many in a row or a spike stop", "[reliability]") {
  using V = train::StepGuard::Verdict;
  train::StepGuard g(2, 10);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  CHECK(g.judge(false, 5.0, 1.0) == V::Apply);
  CHECK(g.judge(true, 4.0, nan) == V::Skip);
  CHECK(contains(g.why(), "skipped: non-finite gradient norm NaN"));
  CHECK(g.judge(true, nan, 1.0) == V::Skip);
  CHECK(g.consecutive() == 2);
  CHECK(g.judge(false, 4.0, 1.0) == V::Apply);  // a good step resets the run of skips
  CHECK(g.consecutive() == 0);
  CHECK(g.skipped() == 2);
  for (int i = 0; i < 2; ++i) CHECK(g.judge(true, nan, nan) == V::Skip);
  CHECK(g.judge(true, nan, nan) == V::Stop);
  CHECK(contains(g.why(), "in 3 consecutive steps (train.max_skipped=2)"));

  train::StepGuard s(5, 10);
  for (int i = 0; i < 5; ++i) CHECK(s.judge(false, 2.0, 1.0) == V::Apply);
  CHECK(s.judge(false, 19.0, 1.0) == V::Apply);  // 19 < 10 x 2
  CHECK(s.judge(false, 100.0, 1.0) == V::Stop);   // over 10 x the mean of the last ones
  CHECK(contains(s.why(), "is over train.spike_factor=10"));
  train::StepGuard off(0, 0);  // spike check off; the first non-finite step stops
  for (int i = 0; i < 6; ++i) CHECK(off.judge(false, i == 5 ? 1e30 : 1.0, 1.0) == V::Apply);
  CHECK(off.judge(true, nan, 1.0) == V::Stop);
}

TEST_CASE("a diverging run skips, stops, and keeps only finite checkpoints", "[reliability][train]") {
  // A deck that diverges: the gradient norm turns NaN while the loss is still finite.
  const std::string dir = fresh_dir("diverge");
  Deck d = load_deck(kTiny, {"train.lr=10", "train.min_lr=10", "train.warmup=0", "train.weight_decay=10",
                             "checkpoint.every=4", "checkpoint.keep=1", "train.steps=40", "train.spike_factor=0",
                             "checkpoint.dir=" + dir});
  train::Trainer tr(d);
  tr.run();
  INFO(tr.record().halted);
  CHECK(tr.record().skipped_steps() > 0);
  CHECK(contains(tr.record().halted, "consecutive steps (train.max_skipped=5)"));
  CHECK(tr.current_step() < 40);
  REQUIRE(!tr.record().checkpoints.empty());
  for (const auto& r : checkpoint::verify_checkpoint(MPI_COMM_SELF, dir)) {
    INFO(r.path);
    CHECK(r.ok());
    CHECK(r.nonfinite == 0);
  }
  // `latest` is the last finite state, and a resume from it loads (the weights are
  // already huge, so it may diverge again: it must stop the same clean way).
  Deck sane = d;
  sane.train.lr = sane.train.min_lr = 1e-3;
  sane.train.weight_decay = 0;
  sane.train.steps = tr.record().checkpoints.back().step + 2;
  train::Trainer again(sane);
  CHECK(again.resume("latest").step == tr.record().checkpoints.back().step);
  again.run();
  CHECK(again.current_step() > tr.record().checkpoints.back().step);
  for (const auto& r : checkpoint::verify_checkpoint(MPI_COMM_SELF, dir)) CHECK(r.nonfinite == 0);
}

TEST_CASE("a save refuses NaN data and writes nothing", "[reliability][checkpoint]") {
  const std::string dir = fresh_dir("nan_save");
  std::vector<float> x(12, 1.0f);
  x[7] = std::numeric_limits<float>::quiet_NaN();
  std::string msg;
  try {
    checkpoint::save_checkpoint(MPI_COMM_SELF, dir, "step-00000001", {},
                                {{"/model/x", flat_range_shard({3, 4}, 0, 12, 0), x.data()}}, 0);
  } catch (const std::runtime_error& e) {
    msg = e.what();
  }
  INFO(msg);
  CHECK(contains(msg, "refusing to write " + dir + "/step-00000001.h5: /model/x holds 1 NaN or infinite values"));
  CHECK(!fs::exists(dir + "/step-00000001.h5"));
  CHECK(!fs::exists(dir + "/step-00000001.h5.tmp"));
  CHECK(!fs::exists(dir + "/latest"));
}

TEST_CASE("retention deletes only the current run's checkpoints", "[reliability][checkpoint]") {
  const std::string dir = fresh_dir("two_runs");
  std::vector<float> x(6, 0.5f);
  auto save = [&](long step, const std::string& run) {
    checkpoint::CheckpointMeta m;
    m.step = step;
    m.data_cursor = step;  // a consistent checkpoint: load cross-checks the two
    m.run_id = run;
    char name[32];
    std::snprintf(name, sizeof name, "step-%08ld", step);
    checkpoint::save_checkpoint(MPI_COMM_SELF, dir, name, m, {{"/model/x", flat_range_shard({6}, 0, 6, 0), x.data()}},
                                3);
  };
  for (long s : {20, 25, 30}) save(s, "aaaaaaaaaaaaaaaa");
  for (long s : {5, 10, 15, 20}) save(s, "bbbbbbbbbbbbbbbb");  // 20 replaces run A's step 20
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"latest", "step-00000010.h5", "step-00000015.h5", "step-00000020.h5",
                                          "step-00000025.h5", "step-00000030.h5"});
  CHECK(checkpoint::run_id_of(dir + "/step-00000025.h5") == "aaaaaaaaaaaaaaaa");
  CHECK(checkpoint::run_id_of(dir + "/step-00000020.h5") == "bbbbbbbbbbbbbbbb");
  CHECK(checkpoint::run_id_of_latest(dir) == "bbbbbbbbbbbbbbbb");
  CHECK(checkpoint::read_checkpoint_meta(MPI_COMM_SELF, dir).run_id == "bbbbbbbbbbbbbbbb");
  // A fresh run is told whose checkpoints these are.
  const std::string p = checkpoint::other_run_problem(dir);
  CHECK(contains(p, dir + ": holds 5 checkpoints (step-00000010.h5 .. step-00000030.h5) of another run (run "
                          "bbbbbbbbbbbbbbbb, latest step-00000020.h5)"));
  CHECK(checkpoint::other_run_problem(fresh_dir("empty")).empty());
}

TEST_CASE("one run per checkpoint directory", "[reliability][checkpoint]") {
  const std::string dir = fresh_dir("lock") + "/ck";
  {
    checkpoint::RunLock first(MPI_COMM_SELF, dir);
    const std::string msg = input_error([&] { checkpoint::RunLock second(MPI_COMM_SELF, dir); });
    CHECK(contains(msg, dir + ": another mini5d run is using this checkpoint directory (pid " +
                            std::to_string(::getpid()) + " on "));
  }
  checkpoint::RunLock after(MPI_COMM_SELF, dir);  // released with the first
  const std::string file = fresh_dir("lock_file") + "/ck";
  std::ofstream(file) << "in the way";
  CHECK(contains(input_error([&] { checkpoint::RunLock l(MPI_COMM_SELF, file); }),
                 file + ": checkpoint.dir is not a usable directory ("));
}

TEST_CASE("an empty deck or a directory is not a deck", "[reliability][deck]") {
  const std::string dir = fresh_dir("decks");
  std::ofstream(dir + "/empty.yaml") << "";
  std::ofstream(dir + "/comments.yaml") << "# nothing but a comment\n\n";
  CHECK(contains(input_error([&] { load_deck(dir + "/empty.yaml"); }), dir + "/empty.yaml: the deck is empty"));
  CHECK(contains(input_error([&] { load_deck(dir + "/comments.yaml"); }), "comments.yaml: the deck is empty"));
  CHECK(input_error([&] { load_deck(dir); }) == dir + ": is a directory, not a deck file");
  CHECK(parse_deck("", "built-in default deck").train.steps == default_deck().train.steps);
}

TEST_CASE("deck strings with control characters survive YAML and JSON", "[reliability][deck]") {
  const std::string odd = "a\tb\"c\\d\ne\x01\x7f" "\xc3\xa9";
  Deck d = parse_deck("", "test", {"data.path=" + odd, "output.report=" + odd});
  const Deck back = parse_deck(d.to_yaml(), "round trip");
  CHECK(back.data.path == odd);
  CHECK(back.output.report == odd);
  const std::string json = d.to_json();
  for (char c : json) CHECK(static_cast<unsigned char>(c) >= 0x20);
  CHECK(contains(json, R"("a\tb\"c\\d\ne\u0001\u007f)" "\xc3\xa9\""));
  CHECK(json_quote("\xff" "x\xc3") == "\"\\u00ffx\\u00c3\"");  // invalid UTF-8 as \u00XX
}
