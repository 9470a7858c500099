// SPDX-License-Identifier: BSD-3-Clause
// --layout / --deck: the spec grammar, the derived d and m, the rank among the
// alternatives (against a count over every fitting plan), and a deck round trip.
#include <catch2/catch.hpp>

#include <sstream>

#include "mini5d/plan/output/emit_deck.hpp"
#include "mini5d/plan/output/given_rank.hpp"
#include "mini5d/plan/search/given_layout.hpp"
#include "plan_test_util.hpp"

using namespace mini5d::plan;

namespace {
std::string spec_error(const std::string& s) {
  try {
    parse_layout_spec(s);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("--layout specs parse with the runtime's defaults", "[plan][given]") {
  const LayoutSpec s = parse_layout_spec("t=8,p=4,mb=2,zero=1,recompute=selective,v=2");
  CHECK(s.layout.t == 8);
  CHECK(s.layout.p == 4);
  CHECK(s.layout.micro_batch == 2);
  CHECK(s.layout.zero == 1);
  CHECK(s.layout.recompute == Recompute::selective);
  CHECK(s.layout.virtual_stages == 2);
  CHECK(s.layout.schedule == Schedule::interleaved);
  CHECK(s.layout.sp);  // on by default with t > 1, as in the runtime
  CHECK(!s.has_d);
  CHECK(!s.has_m);
  CHECK(!parse_layout_spec("t=2,sp=off").layout.sp);
  CHECK(!parse_layout_spec("d=4").layout.sp);
  CHECK(parse_layout_spec("p=2,schedule=gpipe").layout.schedule == Schedule::gpipe);
  CHECK(s.layout.mapping == Mapping::block);  // the search's placement unless map= says otherwise
  CHECK(parse_layout_spec("t=2,d=2,map=cyclic").layout.mapping == Mapping::cyclic);
  CHECK(describe(parse_layout_spec("t=2,d=2,map=cyclic").layout).find(" map=cyclic") != std::string::npos);

  TrainDesc tr;
  tr.global_batch = 1024;
  const Layout l = complete_layout(s, tr, 512);
  CHECK(l.d == 16);            // 512 / (8*4)
  CHECK(l.accumulation == 32);  // 1024 / (2*16)
  const Layout fixed = complete_layout(parse_layout_spec("d=2,m=3"), tr, 512);
  CHECK(fixed.d == 2);
  CHECK(fixed.accumulation == 3);  // kept, so that check_layout can refuse it

  CHECK(spec_error("t=8,q=2") ==
        "--layout: unknown key 'q' (valid: d, t, p, c, e, mb, m, zero, recompute, v, sp, schedule, stages, map)");
  CHECK(spec_error("map=round") == "--layout: map=round is not valid (valid: block, cyclic)");
  CHECK(spec_error("t=2.5") == "--layout: t=2.5 is not valid (valid: an integer in [1, 1048576])");
  CHECK(spec_error("zero=4") == "--layout: zero=4 is not valid (valid: an integer in [0, 3])");
  CHECK(spec_error("recompute=most") ==
        "--layout: recompute=most is not valid (valid: none, selective, full)");
  CHECK(spec_error("t8") ==
        "--layout: 't8' is not key=value (keys: d, t, p, c, e, mb, m, zero, recompute, v, sp, schedule, stages, map)");
}

TEST_CASE("a given layout is ranked among every fitting plan", "[plan][given]") {
  const ModelInput in = load_model_file(plan_test::input("models/gpt2-124m.yaml"));
  ClusterDesc cl = plan_test::toy_cluster(2, 4, 80);
  SearchOptions all;
  all.keep_all = true;
  all.top = 1000000;
  const SearchResult ref = search(in.model, in.train, cl, all);
  REQUIRE(ref.top.size() > 20);
  for (std::size_t k : {std::size_t(0), std::size_t(4), std::size_t(17), ref.top.size() - 1}) {
    INFO("plan #" << k + 1);
    // Evaluated alone, a layout costs what the search costed it.
    const Plan given = evaluate(in.model, in.train, cl, ref.top[k].layout, all);
    CHECK(given.time.step == ref.top[k].time.step);
    SearchOptions o;
    o.given = &given;
    const SearchResult r = search(in.model, in.train, cl, o);
    CHECK(rank_of_given(r).position == k + 1);
    CHECK(rank_of_given(r).fitting == ref.all.size());
    std::ostringstream os;
    print_given_rank(os, given, r, cl);
    INFO(os.str());
    CHECK(os.str().rfind("rank    #" + std::to_string(k + 1) + " of " +
                             std::to_string(ref.all.size()) + " fitting plans",
                         0) == 0);
    if (k > 0) CHECK(os.str().find("slower than #1") != std::string::npos);
  }
  // A layout outside the search space (GPipe is off by default) still gets its place:
  // one more than the plans strictly faster. (GPipe keeps all 32 micro-batches.)
  cl = plan_test::toy_cluster(2, 4, 2000);
  const SearchResult ref2 = search(in.model, in.train, cl, all);
  Layout gp = ref.top.front().layout;
  gp.d = 4, gp.p = 2, gp.t = 1, gp.c = 1, gp.e = 1, gp.virtual_stages = 1;
  gp.schedule = Schedule::gpipe, gp.sp = false, gp.zero = 0, gp.micro_batch = 4;
  gp.accumulation = int(in.train.global_batch / (4 * 4));
  REQUIRE(check_layout(in.model, in.train, cl, gp).empty());
  const Plan g = evaluate(in.model, in.train, cl, gp, all);
  REQUIRE(g.fits);
  std::size_t faster = 0;
  for (const Plan& p : ref2.all) faster += ranks_before(p, g) ? 1 : 0;
  CHECK(faster > 0);
  CHECK(faster < ref2.all.size());
  SearchOptions o;
  o.given = &g;
  CHECK(rank_of_given(search(in.model, in.train, cl, o)).position == faster + 1);
}

TEST_CASE("a deck's layout reads back as the plan it was emitted for", "[plan][given]") {
  const auto [in, cl, o, r] = plan_test::search_top("models/dense-70b.yaml", "clusters/h100-sxm-8.yaml", 16, 3);
  REQUIRE(r.top.size() == 3);
  for (const Plan& p : r.top) {
    std::ostringstream deck;
    write_deck(deck, in, cl, p, false);
    const ModelInput back = parse_model_text(deck.str(), "emitted.yaml");
    REQUIRE(back.is_deck);
    const Layout& l = back.deck_layout;
    INFO(describe(p.layout) << " -> " << describe(l));
    CHECK(describe(l) == describe(p.layout));
    CHECK(back.train.precision == in.train.precision);  // bf16 survives the round trip
    CHECK(back.train.global_batch == in.train.global_batch);
    // The plan had bf16 gradients; the deck trains with mini5d's fp32 main gradients and
    // says grad_reduce_dtype: bf16, so only the gradient buffer differs: with the plan's
    // buffer the deck costs exactly the plan.
    REQUIRE_FALSE(in.train.fp32_grad_accum);
    CHECK(back.train.fp32_grad_accum);
    CHECK(back.train.bf16_grad_reduce);
    TrainDesc as_planned = back.train;
    as_planned.fp32_grad_accum = in.train.fp32_grad_accum;
    CHECK(evaluate(back.model, as_planned, cl, l, o).time.step == p.time.step);
  }
}
