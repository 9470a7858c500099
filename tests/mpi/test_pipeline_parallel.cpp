// SPDX-License-Identifier: BSD-3-Clause
// Pipeline parallelism through the trainer (docs/parallelism.md): layout invariance against
// the single-rank run (tests/mpi/invariance.hpp: losses, pre-clip gradient norms and
// parameter checksums, on the tiny deck as it is and with clipping off and weight decay
// on) for p = 2 and 4 under GPipe and 1F1B, p = 2 with v = 2 under all three
// schedules, d2 x p2 at ZeRO 1, 2 and 3, t2 x p2, and (on 8 ranks) d2 x t2 x p2; schedules
// with m = 1, m < p and m = p that must not deadlock; activation memory and
// micro-batches in flight against the planner; the trace's events against the
// generator's action counts; a checkpoint saved at p = 2 resumed at p = 1 and 4; and
// uneven stages (parallel.stage_layers, and the automatic split): invariance, memory
// against the planner, and a checkpoint of an even split resumed in uneven ones.
#include <mpi.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "mini5d/comm/accounts.hpp"
#include "mini5d/core/deck.hpp"
#include "mini5d/rules/pipeline_schedule.hpp"
#include "mini5d/train/pipeline.hpp"
#include "mini5d/train/trainer.hpp"
#include "invariance_check.hpp"
#include "layouts.hpp"
#include "mpi_util.hpp"
#include "reshard_check.hpp"

using namespace mini5d;
namespace fs = std::filesystem;
using test::Group;
using test::kGlobalBatch;
using test::Layout;
using test::tiny;

namespace {
// Where every pipeline case starts: 4 micro-batches per step whatever p is, 2 layers,
// 1F1B, ZeRO 0.
Layout pipeline() {
  Layout l;
  l.m = 4, l.layers = 2, l.schedule = "1f1b", l.zero = 0, l.v = 1;
  return l;
}

// The single-rank run of the same global batch and depth.
Layout reference(const Layout& l) {
  Layout r = pipeline();
  r.m = l.m;
  r.layers = l.layers;
  return r;
}

void check_invariance(const std::vector<Layout>& layouts, long steps) {
  for (const auto& c : test::configs()) {
    std::map<std::pair<int, int>, test::Reference> refs;  // by (m, layers)
    for (const auto& l : layouts) {
      const std::pair<int, int> key{l.m, l.layers};
      if (!refs.count(key)) refs.emplace(key, test::Reference::run(tiny(reference(l), steps, c.overrides)));
      const test::Reference& ref = refs.at(key);
      test::on_first_group(l.ranks(), [&](MPI_Comm group) {
        train::Trainer tr(tiny(l, steps, c.overrides), group);
        tr.run();
        test::check_invariant(ref, tr, l.name(), c.name);
      });
    }
  }
}
}  // namespace

TEST_CASE("layout invariance: p = 2 and 4 under GPipe and 1F1B, p = 2 v = 2 under every schedule",
          "[pp][mpi][np4][threads]") {
  REQUIRE(test::world_size() == 4);
  std::vector<Layout> layouts;
  for (const char* s : {"gpipe", "1f1b"}) {
    Layout a = pipeline();
    a.p = 2, a.schedule = s;
    layouts.push_back(a);
    Layout b = a;
    b.p = 4, b.layers = 4;
    layouts.push_back(b);
  }
  for (const char* s : {"gpipe", "1f1b", "interleaved"}) {
    Layout a = pipeline();
    a.p = 2, a.v = 2, a.layers = 4, a.schedule = s;
    layouts.push_back(a);
  }
  check_invariance(layouts, 4);
}

TEST_CASE("layout invariance: d2 x p2 at ZeRO 1, 2 and 3, t2 x p2, p4 at ZeRO 3", "[pp][mpi][np4]") {
  std::vector<Layout> layouts;
  for (int zero : {1, 2, 3}) {
    Layout a = pipeline();
    a.d = 2, a.p = 2, a.zero = zero;
    layouts.push_back(a);
  }
  Layout t = pipeline();
  t.t = 2, t.p = 2;
  layouts.push_back(t);
  Layout z = pipeline();  // ZeRO-3 on a group of one, every stage without the embeddings but one
  z.p = 4, z.layers = 4, z.zero = 3;
  layouts.push_back(z);
  check_invariance(layouts, 4);
}

TEST_CASE("no deadlock and the same losses with m = 1, m < p and m = p", "[pp][mpi][np4]") {
  std::vector<Layout> layouts;
  for (const char* s : {"gpipe", "1f1b"})
    for (int m : {1, 2, 4}) {
      Layout a = pipeline();
      a.p = 4, a.layers = 4, a.m = m, a.schedule = s;
      layouts.push_back(a);
    }
  Layout i = pipeline();  // interleaved with m = p
  i.p = 2, i.v = 2, i.layers = 4, i.m = 2, i.schedule = "interleaved";
  layouts.push_back(i);
  for (const auto& l : layouts) {
    const test::Reference ref = test::Reference::run(tiny(reference(l), 2));
    Group g(l.ranks());
    train::Trainer tr(tiny(l, 2), g.comm);
    tr.run();
    const auto w = test::compare_runs(ref, tr);
    INFO(l.name() << ": loss " << w.loss << ", grad norm " << w.grad_norm);
    CHECK(test::within(w));
  }
}

TEST_CASE("activations and micro-batches in flight equal the planner's for GPipe and 1F1B", "[pp][mpi][np4]") {
  for (const char* s : {"gpipe", "1f1b"})
    for (int m : {2, 4, 8}) {
      Layout l = pipeline();
      l.p = 4, l.layers = 4, l.m = m, l.schedule = s;
      Group g(l.ranks());
      train::Trainer tr(tiny(l, 1), g.comm);
      tr.run();
      const auto want = tr.predicted_activation_memory(), got = tr.measured_activation_memory();
      INFO(l.name());
      CHECK(test::all_ranks(got.activations == want.activations));
      for (const auto& r : tr.record().pipeline_ranks) {
        INFO("rank " << r.rank);
        CHECK(r.in_flight == r.predicted_in_flight);
        CHECK(r.activations == r.predicted_activations);
      }
    }
}

TEST_CASE("pp bytes of a step equal the analytic bill", "[pp][mpi][np4]") {
  // Each micro-batch crosses every boundary between virtual stages once forward (the
  // activation) and once backward (its gradient), [rows, d_model] floats each; a rank
  // accounts what it sends and what it receives. rows = B*T, or B*T/t with SP.
  for (int t : {1, 2}) {
    Layout l = pipeline();
    l.p = 2, l.t = t, l.v = t == 1 ? 2 : 1, l.layers = 4, l.m = 4;
    Group g(l.ranks());
    comm::accounts().clear();
    train::Trainer tr(tiny(l, 1), g.comm);
    tr.run();
    const auto& m = tr.deck().model;
    const double rows = double(kGlobalBatch / l.m) * m.seq / t, f = sizeof(float);
    // Edges of this rank's chunks: every chunk but virtual stage 0 receives and every
    // chunk but the last sends, forward and backward alike.
    const int stage = tr.grid().coord(grid::Axis::p), P = l.p * l.v;
    int edges = 0;
    for (int c = 0; c < l.v; ++c) {
      const int vs = c * l.p + stage;
      edges += (vs > 0 ? 1 : 0) + (vs < P - 1 ? 1 : 0);
    }
    const double want = 2.0 * l.m * edges * rows * m.d_model * f;
    const double got = comm::accounts().bytes("pp", comm::Traffic::activations);
    INFO(l.name() << ": pp activation bytes " << got << ", want " << want);
    CHECK(test::all_ranks(got == want));
  }
}

TEST_CASE("the trace holds every rank's forwards and backwards, as many as the generator's", "[pp][mpi][np4]") {
  const std::string path = (fs::current_path() / "pp_trace.json").string();
  Layout l = pipeline();
  l.p = 4, l.layers = 4, l.m = 4;
  const long steps = 3;
  {
    Group g(l.ranks());
    train::Trainer tr(tiny(l, steps, {"output.trace=" + path}), g.comm);
    tr.run();
  }
  MPI_Barrier(MPI_COMM_WORLD);
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  auto count = [&](const std::string& needle) {
    int n = 0;
    for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
    return n;
  };
  bool ok = true;
  for (int r = 0; r < l.p; ++r) {
    int fw = 0, bw = 0;
    for (const auto& a : pp::schedule({Schedule::one_f_one_b, l.p, 1, l.m}, r)) {
      fw += a.op == pp::Op::forward;
      bw += a.op == pp::Op::backward;
    }
    const std::string pid = "\"pid\": " + std::to_string(r) + ",";
    ok = ok && count("\"cat\": \"forward\", " + pid) == steps * fw;
    ok = ok && count("\"cat\": \"backward\", " + pid) == steps * bw;
    ok = ok && count("\"args\": {\"name\": \"rank " + std::to_string(r) + " (d0 p" + std::to_string(r)) == 1;
  }
  CHECK(test::all_ranks(ok));
}

TEST_CASE("a checkpoint saved at p = 2 resumes at p = 1 and p = 4", "[pp][mpi][np4][checkpoint]") {
  Layout one = pipeline();
  one.layers = 4;
  Layout two = one, four = one;
  two.p = 2;
  four.p = 4;
  test::check_reshard(test::input_deck("tiny.yaml"), one, two, {one, four}, 4, 2, "pp_reshard");
}

TEST_CASE("uneven stages: invariance at p = 2 with 3+5 blocks and at p = 4 v = 2, memory equal the planner's",
          "[pp][mpi][np4]") {
  // 3+5: the head's stage holds the most blocks; the interleaved split gives rank 0's two
  // chunks 1 and 2 blocks and rank 3's 2 and 1, so chunks of one rank differ.
  Layout a = pipeline();
  a.p = 2, a.layers = 8, a.stages = "3,5";
  Layout b = pipeline();
  b.p = 4, b.v = 2, b.layers = 10, b.schedule = "interleaved", b.stages = "1,1,1,2,2,1,1,1";
  Layout c = pipeline();  // the automatic split of 5 blocks over 2 stages
  c.p = 2, c.layers = 5;
  check_invariance({a, b, c}, 3);
  for (const Layout& l : {a, b, c}) {
    Group g(l.ranks());
    train::Trainer tr(tiny(l, 1), g.comm);
    tr.run();
    const auto want = tr.predicted_activation_memory(), got = tr.measured_activation_memory();
    INFO(l.name() << ": activations " << got.activations << ", planner " << want.activations);
    CHECK(test::all_ranks(got.activations == want.activations));
    // The chunks this rank holds are the split's.
    const auto split = train::pipeline_split(tr.deck());
    const int stage = tr.grid().coord(grid::Axis::p);
    bool same = true;
    for (std::size_t j = 0; j < tr.model().chunks().size(); ++j)
      same = same && tr.model().chunks()[j].blocks == split[std::size_t(int(j) * l.p + stage)];
    CHECK(test::all_ranks(same));
  }
}

TEST_CASE("a checkpoint saved with an even split resumes with uneven ones", "[pp][mpi][np4][checkpoint]") {
  Layout one = pipeline();
  one.layers = 8;
  Layout even = one, uneven = one, interleaved = one;
  even.p = 2;
  uneven.p = 2, uneven.stages = "5,3";
  interleaved.p = 2, interleaved.v = 2, interleaved.schedule = "interleaved", interleaved.stages = "1,3,3,1";
  test::check_reshard(test::input_deck("tiny.yaml"), one, even, {uneven, interleaved}, 4, 2, "pp_uneven_reshard");
}

TEST_CASE("layout invariance: d2 x t2 x p2 on 8 ranks", "[pp][mpi][np8]") {
  REQUIRE(test::world_size() == 8);
  Layout l = pipeline();
  l.d = 2, l.t = 2, l.p = 2, l.zero = 1;
  check_invariance({l}, 3);
}
