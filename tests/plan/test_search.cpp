// SPDX-License-Identifier: BSD-3-Clause
// The search: the seed articles' rules of thumb come out of it, every plan it prints
// is valid, and on small cases it misses no valid plan that fits (brute force).
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <sstream>
#include <tuple>

#include "mini5d/plan/output/explain.hpp"
#include "mini5d/plan/inputs/input_files.hpp"
#include "mini5d/plan/search/search.hpp"
#include "plan_test_util.hpp"

using namespace mini5d::plan;

TEST_CASE("a model that fits one device gets pure data parallelism", "[plan][search]") {
  const ModelInput in = load_model_file(plan_test::input("models/gpt2-124m.yaml"));
  ClusterDesc cl = load_cluster_file(plan_test::input("clusters/h100-sxm-8.yaml"));
  cl.nodes = 1;
  const SearchResult r = search(in.model, in.train, cl, {});
  REQUIRE(!r.top.empty());
  const Layout& l = r.top.front().layout;
  CHECK(l.d == 8);
  CHECK(l.t == 1);
  CHECK(l.p == 1);
  CHECK(l.c == 1);
  CHECK(l.e == 1);
}

TEST_CASE("1024 devices in nodes of 8: t inside a node, smallest p that fits, rest to d",
          "[plan][search]") {
  const ModelInput in = load_model_file(plan_test::input("models/dense-70b.yaml"));
  ClusterDesc cl = load_cluster_file(plan_test::input("clusters/h100-sxm-8.yaml"));
  cl.nodes = 128;
  // The seed articles' recipe is classic 3-D parallelism: the training state is not
  // sharded by ZeRO, activations are kept small by (selective) recomputation.
  SearchOptions o;
  o.top = 5;
  o.zero_stages = {0};
  o.recomputes = {Recompute::selective};
  // The model needs sharding: 70B x 16 B is 14x one device.
  CHECK(!best_for_degrees(in.model, in.train, cl, {1024, 1, 1, 1, 1}, o));
  const SearchResult r = search(in.model, in.train, cl, o);
  REQUIRE(!r.top.empty());
  const Layout& l = r.top.front().layout;
  INFO(describe(l));
  CHECK(l.t > 1);
  CHECK(8 % l.t == 0);  // a tensor group inside one node
  CHECK(l.c == 1);
  CHECK(l.e == 1);
  CHECK(l.d == 1024 / (l.t * l.p));  // everything else to data parallelism
  CHECK(l.p > 1);
  for (long long p : divisors(1024 / l.t)) {  // no shallower pipeline fits at this t
    if (p >= l.p) break;
    INFO("p=" << p);
    CHECK(!best_for_degrees(in.model, in.train, cl, {int(1024 / l.t / p), l.t, int(p), 1, 1}, o));
  }
  // The full search (ZeRO, any recomputation) may trade pipeline depth against the
  // sharded state, but still keeps tensor groups inside nodes and leaves e alone.
  SearchOptions all;
  all.top = 3;
  const SearchResult ra = search(in.model, in.train, cl, all);
  REQUIRE(!ra.top.empty());
  const Layout& la = ra.top.front().layout;
  INFO(describe(la));
  CHECK(8 % la.t == 0);
  CHECK(la.e == 1);
  CHECK(la.d * la.t * la.p * la.c == 1024);
  CHECK(ra.top.front().time.step <= r.top.front().time.step);  // more freedom, no slower
}

TEST_CASE("GPT-2's unpadded 50257 plans t > 1; what the search excludes is said", "[plan][search][vocab]") {
  ModelInput in = load_model_file(plan_test::input("models/gpt2-124m.yaml"));
  in.model.vocab = 50257;  // the file has Megatron's padded 50304; here the raw vocabulary
  ClusterDesc cl = load_cluster_file(plan_test::input("clusters/h100-sxm-8.yaml"));
  cl.nodes = 1;
  const SearchResult r = search(in.model, in.train, cl, {});
  REQUIRE(!r.top.empty());
  // t = 2 and 4 have plans (t = 8 does not divide the 12 heads, and says so).
  std::set<int> ts;
  for (const auto& [deg, plan] : r.best_by_degrees) ts.insert(deg[1]);
  CHECK(ts.count(2));
  CHECK(ts.count(4));
  CHECK(!ts.count(8));
  const auto t8 = r.excluded.find(Degrees{1, 8, 1, 1, 1});
  REQUIRE(t8 != r.excluded.end());
  CHECK(t8->second == "parallel.t=8: must divide model.heads=12");
  for (const auto& [deg, why] : r.excluded) CHECK(why.find("vocab") == std::string::npos);
  // The t = 4 plan costs the padded vocabulary: the same as a model of 50260 tokens
  // that needs no padding, and more than the unpadded 50257 would be.
  const auto t4 = best_for_degrees(in.model, in.train, cl, {2, 4, 1, 1, 1}, {});
  REQUIRE(t4);
  ModelDesc exact = in.model;
  exact.vocab = 50260;
  CHECK(in.model.padded_vocab(4) == 50260);
  const Plan same = evaluate(exact, in.train, cl, t4->layout, {});
  CHECK(same.memory.total() == t4->memory.total());
  CHECK(same.time.step == t4->time.step);
  CHECK(same.time.model_flops == t4->time.model_flops);
  // Megatron's 128*t pads further, to 50688 at t = 4.
  ModelDesc auto_pad = in.model;
  auto_pad.vocab_pad_to = 0;
  CHECK(auto_pad.padded_vocab(4) == 50688);
  CHECK(evaluate(auto_pad, in.train, cl, t4->layout, {}).memory.weights > t4->memory.weights);
  // The checkpoint holds the model's own parameters, padding or not.
  CHECK(count_params(in.model).total == count_params(auto_pad).total);
  CHECK(count_params(auto_pad, 4).total - count_params(in.model).total == 2.0 * (50688 - 50257) * 768);
  // --explain names the padding of a t > 1 plan and every exclusion with its rule.
  std::ostringstream one, all;
  explain_plan(one, in.model, in.train, cl, *t4, {});
  CHECK(one.str().find("the vocabulary of 50257 is padded to 50260 rows") != std::string::npos);
  explain(all, in.model, in.train, cl, r, {});
  CHECK(all.str().find("excluded: " + std::to_string(r.excluded.size()) + " of " +
                       std::to_string(r.degree_tuples) + " (d,t,p,c,e) tuples") != std::string::npos);
  CHECK(all.str().find("parallel.t=8: must divide model.heads=12: ") != std::string::npos);
}

namespace {

// The rules of docs/parallelism.md written out again, independently of check_layout.
bool brute_valid(const ModelDesc& m, long long batch, long long per_node, const Layout& l) {
  if (m.heads % l.t || m.ffn % l.t || per_node % l.t) return false;  // (the vocabulary is padded)
  if (m.layers % (l.p * l.virtual_stages)) return false;
  if (l.c > 1 && m.seq % (2 * l.c)) return false;
  if (l.sp && (l.t == 1 || (m.seq / l.c) % l.t || m.seq % l.c)) return false;
  if (l.e > 1 && (!m.moe() || m.experts % l.e)) return false;
  if (m.moe() && l.t > 1 && (m.experts % (l.e * l.t) || !l.sp)) return false;
  if (l.virtual_stages > 1 && (l.p == 1 || l.accumulation % l.p)) return false;
  if (l.zero > 0 && l.d * l.c * l.e == 1) return false;  // same plan as ZeRO-0
  return 1LL * l.micro_batch * l.accumulation * l.d * l.e == batch;
}

auto key(const Layout& l) {
  return std::make_tuple(l.d, l.t, l.p, l.c, l.e, l.micro_batch, l.accumulation, l.zero,
                         int(l.recompute), l.virtual_stages, l.sp);
}

}  // namespace

TEST_CASE("enumeration: every plan valid, no fitting plan missing (brute force)",
          "[plan][search]") {
  const ModelInput tiny = load_model_file(plan_test::data("deck_small.yaml"));
  ModelDesc moe = tiny.model;
  moe.experts = 4, moe.top_k = 2, moe.layers = 4;
  ModelDesc dense = tiny.model;
  dense.layers = 4;
  for (const ModelDesc& m : {dense, moe}) {
    TrainDesc tr;
    tr.global_batch = 16;
    // 2 nodes of 4 devices, memory tight enough that some plans do not fit.
    ClusterDesc cl = plan_test::toy_cluster(2, 4, 0.0025);
    SearchOptions o;
    o.keep_all = true;
    o.top = 1000000;
    const SearchResult r = search(m, tr, cl, o);
    std::set<decltype(key(Layout{}))> found;
    for (const Plan& p : r.all) {
      CHECK(brute_valid(m, tr.global_batch, cl.devices_per_node, p.layout));
      CHECK(p.fits);
      CHECK(check_layout(m, tr, cl, p.layout, o.rules).empty());
      found.insert(key(p.layout));
    }
    for (const Plan& p : r.top) CHECK(found.count(key(p.layout)) == 1);
    CHECK(std::is_sorted(r.top.begin(), r.top.end(), ranks_before));

    std::size_t expected = 0, unfit = 0;
    const int N = 8;
    for (int d = 1; d <= N; ++d)
      for (int t = 1; t <= N; ++t)
        for (int p = 1; p <= N; ++p)
          for (int c = 1; c <= N; ++c)
            for (int e = 1; e <= N; ++e) {
              if (d * t * p * c * e != N) continue;
              for (int mb = 1; mb <= 16; ++mb)
                for (int acc = 1; acc <= 16; ++acc)
                  for (int v = 1; v <= 8; ++v)
                    for (int sp = 0; sp < 2; ++sp)
                      for (int z = 0; z < 4; ++z)
                        for (int rc = 0; rc < 3; ++rc) {
                          Layout l;
                          l.d = d, l.t = t, l.p = p, l.c = c, l.e = e;
                          l.micro_batch = mb, l.accumulation = acc, l.virtual_stages = v;
                          l.schedule = v > 1 ? Schedule::interleaved : Schedule::one_f_one_b;
                          l.sp = sp == 1, l.zero = z, l.recompute = Recompute(rc);
                          if (!brute_valid(m, tr.global_batch, cl.devices_per_node, l)) continue;
                          if (device_memory(m, tr, cl, l, o.memory).total() > cl.device.memory) {
                            ++unfit;
                            continue;
                          }
                          ++expected;
                          CHECK(found.count(key(l)) == 1);
                        }
            }
    CHECK(expected == r.all.size());
    CHECK(expected == r.fitting);
    CHECK(unfit > 0);      // the memory limit bites
    CHECK(expected > 50);  // and leaves a real choice
  }
}

TEST_CASE("a model too big for the cluster reports the shortfall", "[plan][search]") {
  const ModelInput in = load_model_file(plan_test::input("models/dense-400b.yaml"));
  ClusterDesc cl = load_cluster_file(plan_test::input("clusters/h100-sxm-8.yaml"));
  cl.nodes = 1;
  const SearchResult r = search(in.model, in.train, cl, {});
  CHECK(r.top.empty());
  REQUIRE(r.least_memory);
  // 6.4 TB over 8 devices cannot fit in 80 GiB each, whatever the sharding.
  CHECK(r.least_memory->memory.total() > 6.3e12 / 8);
  // Without a data-parallel group there is nothing for ZeRO to shard.
  CHECK(r.least_memory->layout.d == 1);
}
